//! Plain-text tables for the terminal: a leaf every renderer uses.

use std::fmt::Write as _;

/// Left-aligns the first `text_columns` columns, right-aligns the rest.
pub(super) fn table(header: &[&str], rows: &[Vec<String>], text_columns: usize) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            if i < text_columns {
                let _ = write!(s, "{cell:<w$}");
            } else {
                let _ = write!(s, "{cell:>w$}");
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(header.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

/// A figure in seconds as a duration (zero for one that is negative or not finite).
pub(super) fn seconds(s: f64) -> std::time::Duration {
    std::time::Duration::try_from_secs_f64(s).unwrap_or_default()
}
