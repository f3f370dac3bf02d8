//! Generates the Rust mapping of the examples' Slice files.
fn main() {
    floe_build::configure()
        .compile(
            &["slice/Hello.ice", "slice/Callback.ice", "slice/Throughput.ice", "slice/FileTransfer.ice"],
            &["slice"],
        )
        .expect("example Slice compiles");
}
