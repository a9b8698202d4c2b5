//! Data moves one way (DESIGN.md): a module of the core uses only itself and the modules
//! before it in pipeline order, so no two modules depend on each other (tests aside: they
//! build their inputs with `testing`).

use std::path::Path;

/// The core's top-level modules in pipeline order (lib.rs's).
const ORDER: [&str; 10] = ["error", "pyfmt", "model", "wire", "wal", "read", "assemble", "run", "checks", "testing"];

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_module_uses_a_later_one() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut backward = Vec::new();
    let mut seen = 0;
    for path in &files {
        let rel = path.strip_prefix(&src).expect("under src");
        let own = rel.components().next().expect("a name").as_os_str().to_str().expect("UTF-8").trim_end_matches(".rs");
        if own == "lib" {
            continue;
        }
        let at = ORDER.iter().position(|m| *m == own).unwrap_or_else(|| panic!("{own} is not in ORDER"));
        let whole = std::fs::read_to_string(path).expect("readable");
        // a file's tests may use any module (testing.rs builds their runs)
        let text = whole.split("#[cfg(test)]").next().expect("a first part");
        for (i, _) in text.match_indices("crate::") {
            let rest = &text[i + "crate::".len()..];
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if let Some(target) = ORDER.iter().position(|m| *m == name) {
                seen += 1;
                if target > at {
                    backward.push(format!("{} uses crate::{name}", rel.display()));
                }
            }
        }
    }
    assert!(seen > 20, "too few uses found ({seen}): the test reads nothing");
    assert_eq!(backward, Vec::<String>::new());
}
