//! `clients`: the shipped adapters as a table.

use lockbench_core::Client;

use super::table::table;

/// One row per shipped adapter: its library, backend, pinned version and whether it is
/// installed (`pinned` and `installed` asked of each).
pub fn clients_table(
    pinned: impl Fn(Client) -> Option<String>,
    installed: impl Fn(Client) -> bool,
) -> String {
    let rows: Vec<Vec<String>> = Client::ALL
        .into_iter()
        .map(|client| {
            vec![
                client.name().to_string(),
                client.library().to_string(),
                client.backend().name().to_string(),
                pinned(client).unwrap_or_else(|| "-".to_string()),
                if installed(client) {
                    "yes".to_string()
                } else {
                    "no: scripts/clients.sh up".to_string()
                },
            ]
        })
        .collect();
    table(
        &["client", "library", "backend", "pinned", "installed"],
        &rows,
        5,
    )
}
