//! `RELIABILITY.md` cannot drift from the tests: every row of its tables names the tests (or the
//! script) that prove it, as `` `path/to/file.rs::function` `` or `` `path/to/script` ``, and this
//! test checks that each named file exists and defines each named function. Reads files only.

use std::path::Path;

/// One reference from the document: a file, and optionally a function that must be defined in it.
#[derive(Debug, PartialEq)]
struct Reference {
    file: String,
    function: Option<String>,
}

/// The backticked references of one table row's last cell.
fn references(cell: &str) -> Vec<Reference> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(|r| match r.split_once("::") {
            Some((file, function)) => Reference {
                file: file.to_owned(),
                function: Some(function.to_owned()),
            },
            None => Reference {
                file: r.to_owned(),
                function: None,
            },
        })
        .collect()
}

/// The table rows of the document (header and separator lines excluded), as their cells.
fn rows(doc: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut in_table = false;
    for line in doc.lines() {
        let line = line.trim();
        if !line.starts_with('|') {
            in_table = false;
            continue;
        }
        let cells: Vec<String> = line
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_owned())
            .collect();
        if !in_table {
            // The first line of a table is its header; the separator follows.
            in_table = true;
            continue;
        }
        if cells
            .iter()
            .all(|c| c.chars().all(|ch| ch == '-' || ch == ':'))
        {
            continue;
        }
        out.push(cells);
    }
    out
}

fn defines(source: &str, function: &str) -> bool {
    source.contains(&format!("fn {function}(")) || source.contains(&format!("fn {function}<"))
}

#[test]
fn every_row_names_tests_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("RELIABILITY.md")).expect("RELIABILITY.md");
    let rows = rows(&doc);
    assert!(rows.len() >= 10, "RELIABILITY.md lists {} rows", rows.len());
    let mut problems = Vec::new();
    for row in &rows {
        let proof = row.last().map(String::as_str).unwrap_or("");
        let refs = references(proof);
        if refs.is_empty() {
            problems.push(format!("row {:?} names no test", row.first()));
        }
        for r in refs {
            let Ok(source) = std::fs::read_to_string(root.join(&r.file)) else {
                problems.push(format!("{}: no such file", r.file));
                continue;
            };
            if let Some(f) = &r.function
                && !defines(&source, f)
            {
                problems.push(format!("{}: defines no fn {f}", r.file));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "RELIABILITY.md drifted:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_checker_reads_rows_and_references() {
    let doc = "# t\n\n| a | proof |\n|---|---|\n| x | `src/a.rs::f`, `scripts/s.sh` |\n\ntext\n";
    let rows = rows(doc);
    assert_eq!(rows.len(), 1);
    assert_eq!(
        references(&rows[0][1]),
        vec![
            Reference {
                file: "src/a.rs".into(),
                function: Some("f".into())
            },
            Reference {
                file: "scripts/s.sh".into(),
                function: None
            },
        ]
    );
    assert!(defines("fn f() {}", "f"));
    assert!(!defines("fn ff() {}", "f"));
}
