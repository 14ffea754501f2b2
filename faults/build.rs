//! Builds the wall-clock shim (`shim/wallclock.c`) as a shared library the lab loads into its
//! private Redis servers with LD_PRELOAD; the bytes are compiled into the crate. Without a C
//! compiler the library is empty and the clock-jump cells say so when they are skipped.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=shim/wallclock.c");
    println!("cargo:rerun-if-env-changed=CC");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let library = out.join("libwallclock.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let built = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-o"])
        .arg(&library)
        .arg("shim/wallclock.c")
        .arg("-ldl")
        .status()
        .is_ok_and(|s| s.success());
    if !built {
        println!(
            "cargo:warning=could not build the wall-clock shim with {cc}; the fault lab's clock-jump cells will be skipped"
        );
        std::fs::write(&library, b"").expect("writing into OUT_DIR");
    }
}
