//! The shell a user types in: completion scripts and man pages come from the clap definitions the
//! binary parses, so every subcommand is in them; what clap refuses is one line, like any bad
//! input.

mod common;

use common::{lockbench, refused};

/// Every command `lockbench --help` lists.
fn subcommands() -> Vec<String> {
    let out = lockbench().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn the_bash_completion_names_every_subcommand() {
    let commands = subcommands();
    assert!(commands.len() >= 15, "{commands:?}");
    for must in ["run", "decide", "faults", "completions", "man"] {
        assert!(commands.iter().any(|c| c == must), "{must} in {commands:?}");
    }
    let out = lockbench().args(["completions", "bash"]).output().unwrap();
    assert!(out.status.success());
    let script = String::from_utf8_lossy(&out.stdout);
    for c in &commands {
        assert!(
            script.contains(&format!("lockbench,{c})")),
            "the bash completion completes `lockbench {c}`"
        );
    }
    // bash itself reads the script.
    let syntax = std::process::Command::new("bash")
        .args(["-n", "-c", &script])
        .status()
        .unwrap();
    assert!(syntax.success(), "the completion script is valid bash");
}

#[test]
fn a_man_page_per_command() {
    let dir = tempfile::tempdir().unwrap();
    let out = lockbench()
        .args(["man", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for c in subcommands().iter().chain(["".to_string()].iter()) {
        let name = if c.is_empty() {
            "lockbench.1".to_string()
        } else {
            format!("lockbench-{c}.1")
        };
        let page = std::fs::read_to_string(dir.path().join(&name))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(page.starts_with(".ie \\n(.g .ds Aq"), "{name} is roff");
        assert!(page.contains(".SH NAME"), "{name}");
    }
}

#[test]
fn an_unknown_shell_is_refused_in_one_line() {
    refused(&["completions", "tcsh"], &["tcsh", "bash"]);
}

/// A flag clap itself refuses (unknown, missing its value, in conflict) is one line and exit 2,
/// like every other bad input.
#[test]
fn flags_clap_refuses_are_one_line() {
    refused(
        &["simulate", "--bogus"],
        &["unexpected argument '--bogus'", "see --help"],
    );
    refused(
        &["bench", "--contenders"],
        &["--contenders", "a value is required"],
    );
    refused(
        &["faults", "--clean", "--out", "x"],
        &["'--clean' cannot be used with '--out <DIR>'"],
    );
}

/// `lockbench --help` lists each command in one short line, as cargo and ripgrep do; the rest is
/// in the command's own `--help`.
#[test]
fn the_command_list_is_one_short_line_a_command() {
    let out = lockbench().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert!(commands.len() >= 15, "{help}");
    for line in commands {
        assert!(line.len() <= 100, "{} characters: {line}", line.len());
    }
    // The long text is kept for the command's own help.
    let out = lockbench().args(["faults", "--help"]).output().unwrap();
    let faults = String::from_utf8_lossy(&out.stdout);
    assert!(faults.contains("late releases, slow replies"), "{faults}");
}
