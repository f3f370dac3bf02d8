//! Generated code for the examples (see `src/bin/` for the programs).
#![allow(missing_docs)]

include!(concat!(env!("OUT_DIR"), "/Hello.rs"));

/// The callback example's types.
pub mod callback {
    #![allow(missing_docs)]
    include!(concat!(env!("OUT_DIR"), "/Callback.rs"));
}

/// The throughput example's types.
pub mod throughput {
    #![allow(missing_docs)]
    include!(concat!(env!("OUT_DIR"), "/Throughput.rs"));
}

/// The file transfer example's types.
pub mod file_transfer {
    #![allow(missing_docs)]
    include!(concat!(env!("OUT_DIR"), "/FileTransfer.rs"));
}

/// Reads `--endpoints`/`--proxy` style options: the value after `flag`, or `default`.
pub fn arg(flag: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned().unwrap_or_else(|| default.to_string())
}
