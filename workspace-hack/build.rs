// A build script is required for cargo to consider build dependencies.
fn main() {
    // Without a rerun-if line cargo fingerprints this script by the newest modification time in
    // the package, compared for equality: `.ci/source-times age` moving every unchanged file to
    // 2000-01-01 changed that value, so the first warm CI run after a cold one rebuilt this crate
    // and every workspace crate above it. A named file is compared as newer-or-not instead.
    println!("cargo:rerun-if-changed=build.rs");
}
