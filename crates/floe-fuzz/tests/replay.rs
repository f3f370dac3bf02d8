//! Replays every corpus entry and every saved crash through its fuzz target (the fuzzers run
//! for long behind `scripts/fuzz`; this keeps what they found fixed).

use std::path::Path;

#[test]
fn corpora_and_regressions_replay_cleanly() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut total = 0;
    for (name, target) in floe_fuzz::TARGETS {
        for dir in ["corpus", "regressions"] {
            let d = root.join(dir).join(name);
            let Ok(entries) = std::fs::read_dir(&d) else { continue };
            for e in entries.flatten() {
                let data = std::fs::read(e.path()).unwrap();
                target(&data);
                total += 1;
            }
        }
    }
    assert!(total >= 200, "only {total} corpus entries replayed: the seed corpora are missing");
}

#[test]
fn class_seeds_decode_and_the_corpus_has_them() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/classes");
    for (i, seed) in floe_fuzz::class_seeds().iter().enumerate() {
        floe_fuzz::classes(seed);
        let file = dir.join(format!("seed-{i}"));
        if std::env::var_os("FLOE_WRITE_SEEDS").is_some() {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&file, seed).unwrap();
        }
        assert_eq!(
            std::fs::read(&file).ok().as_deref(),
            Some(seed.as_slice()),
            "{} is missing or stale",
            file.display()
        );
    }
}
