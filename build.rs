//! Records the git commit the binary is built from, for results manifests: from git when the
//! source is a clone, else from `LOCKBENCH_GIT_COMMIT` in the build's environment (a container
//! build, whose context leaves `.git` out, passes it as a build argument); empty when neither
//! says, and the manifests then say no commit.

fn main() {
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs/heads");
    println!("cargo:rerun-if-env-changed=LOCKBENCH_GIT_COMMIT");
    let from_git = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    let given = std::env::var("LOCKBENCH_GIT_COMMIT")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_hexdigit()));
    let commit = from_git.or(given).unwrap_or_default();
    println!("cargo:rustc-env=LOCKBENCH_GIT_COMMIT={commit}");
}
