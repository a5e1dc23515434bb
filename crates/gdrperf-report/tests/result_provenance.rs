//! Every result file committed under `results/` names the git commit and the command that made it
//! (brief: "each file names command, git commit, machine, date"). A file passes when:
//!
//! * it is JSON whose `metadata` has `git_commit` and `argv` (what the bench binaries write), or
//! * its text names both: a line with "commit" and a hexadecimal commit id, and the word "command", or
//! * a `PROVENANCE.md` in its folder or a folder above (up to `results/`) has a paragraph that
//!   names it (its path from that folder, or a folder of it ending in `/`) and holds a commit id
//!   and the word "command": the way to record files that cannot say it themselves (CSV rows,
//!   `.hgrm`, `.hdr`, `.png`).
//!
//! `README.md` and `PROVENANCE.md` themselves describe, they are not results.
//!
//! With `GDRPERF_PROVENANCE_DIR` set, the same rule checks that folder instead (and that it holds
//! files): the Soft-RoCE VM test `20-demo.sh` runs the demo's command and then this binary on its
//! output, which proves that `./scripts/demo.sh` then `./scripts/test.sh` cannot fail here.

use std::fs;
use std::path::{Path, PathBuf};

fn results_folder() -> PathBuf {
    match std::env::var_os("GDRPERF_PROVENANCE_DIR") {
        Some(folder) => PathBuf::from(folder),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results"),
    }
}

fn files_under(folder: &Path, found: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(folder).unwrap_or_else(|error| panic!("{}: {error}", folder.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, found);
        } else {
            found.push(path);
        }
    }
}

/// A word of 7 to 40 hexadecimal digits with at least one digit and one letter (a commit id, not
/// a plain number or word).
fn has_commit_id(text: &str) -> bool {
    text.split(|c: char| !c.is_ascii_alphanumeric()).any(|word| {
        (7..=40).contains(&word.len())
            && word.chars().all(|c| c.is_ascii_hexdigit())
            && word.chars().any(|c| c.is_ascii_digit())
            && word.chars().any(|c| c.is_ascii_alphabetic())
    })
}

fn names_itself(path: &Path) -> bool {
    let Ok(bytes) = fs::read(path) else { return false };
    let Ok(text) = String::from_utf8(bytes) else { return false };
    if path.extension().is_some_and(|extension| extension == "json") {
        if let Ok(document) = serde_json::from_str::<serde_json::Value>(&text) {
            let metadata = &document["metadata"];
            if metadata["git_commit"].as_str().is_some_and(has_commit_id) && metadata["argv"].is_array() {
                return true;
            }
        }
    }
    let lower = text.to_lowercase();
    lower.contains("command") && lower.lines().any(|line| line.contains("commit") && has_commit_id(line))
}

fn named_in_provenance(path: &Path, results: &Path) -> bool {
    let mut folder = path.parent();
    while let Some(current) = folder {
        if let Ok(text) = fs::read_to_string(current.join("PROVENANCE.md")) {
            let relative = path.strip_prefix(current).unwrap().to_string_lossy().to_string();
            let covered = |paragraph: &str| {
                let names = paragraph.contains(&format!("`{relative}`"))
                    || relative
                        .match_indices('/')
                        .any(|(at, _)| paragraph.contains(&format!("`{}/`", &relative[..at])));
                names && paragraph.to_lowercase().contains("command") && has_commit_id(paragraph)
            };
            if text.split("\n\n").any(covered) {
                return true;
            }
        }
        if current == results {
            break;
        }
        folder = current.parent();
    }
    false
}

#[test]
fn every_result_file_names_its_commit_and_command() {
    let results = results_folder().canonicalize().unwrap();
    let mut files = Vec::new();
    files_under(&results, &mut files);
    assert!(!files.is_empty(), "no files under {}", results.display());
    let unnamed: Vec<String> = files
        .iter()
        .filter(|path| {
            !matches!(path.file_name().and_then(|name| name.to_str()), Some("README.md" | "PROVENANCE.md"))
        })
        .filter(|path| !names_itself(path) && !named_in_provenance(path, &results))
        .map(|path| path.strip_prefix(&results).unwrap().display().to_string())
        .collect();
    assert!(
        unnamed.is_empty(),
        "result files that name no commit and command (add them to a PROVENANCE.md): {unnamed:#?}"
    );
}

#[test]
fn the_rules_accept_and_refuse_what_they_should() {
    assert!(has_commit_id("git commit: 6fb5b47"));
    assert!(!has_commit_id("committed together with this file on 2026-12-02"));
    assert!(!has_commit_id("12345678 deadbeefcafe"));
    let folder = std::env::temp_dir().join(format!("provenance-test-{}", std::process::id()));
    fs::create_dir_all(folder.join("hdr")).unwrap();
    let (csv, hgrm, orphan) = (folder.join("run.csv"), folder.join("hdr/a.hgrm"), folder.join("b.png"));
    fs::write(&csv, "# command: gdr-write-bw -a\n# git commit: 1a2b3c4d\nbytes\n2\n").unwrap();
    fs::write(&hgrm, "Value Percentile\n").unwrap();
    fs::write(&orphan, "binary").unwrap();
    fs::write(
        folder.join("PROVENANCE.md"),
        "- `hdr/`: command `gdr-read-lat --hdr-dir hdr`, commit 1a2b3c4d\n",
    )
    .unwrap();
    assert!(names_itself(&csv));
    assert!(!names_itself(&hgrm) && named_in_provenance(&hgrm, &folder));
    assert!(!names_itself(&orphan) && !named_in_provenance(&orphan, &folder));
    fs::remove_dir_all(&folder).unwrap();
}

/// The commit-like words of `text`'s lines that speak of a commit ("git commit: 1a2b3c4",
/// "binaries built from commit ..."), as [`has_commit_id`] spots them.
fn cited_commits(text: &str) -> Vec<String> {
    text.lines()
        .filter(|line| line.to_lowercase().contains("commit"))
        .flat_map(|line| line.split(|c: char| !c.is_ascii_alphanumeric()))
        .filter(|word| has_commit_id(word))
        .map(str::to_string)
        .collect()
}

fn git(arguments: &[&str]) -> Option<std::process::Output> {
    std::process::Command::new("git").args(arguments).current_dir(env!("CARGO_MANIFEST_DIR")).output().ok()
}

/// Every commit a file under `results/` cites is in this checkout's history (an ancestor of
/// HEAD), so that a reader of a clone can check it out: a commit rebased away, or a tag (tags do
/// not travel with a push here), leaves a result nobody can follow. Needs a
/// full clone; says so and checks nothing in a copy without git history (the demo's output in
/// the VM, `GDRPERF_PROVENANCE_DIR`, has none).
#[test]
fn every_cited_commit_is_in_the_history() {
    let inside = git(&["rev-parse", "--is-shallow-repository"]);
    let Some(answer) = inside.filter(|output| output.status.success()) else {
        eprintln!("skipped: not a git checkout (or no git), so there is no history to look in");
        return;
    };
    if String::from_utf8_lossy(&answer.stdout).trim() == "true"
        || std::env::var_os("GDRPERF_PROVENANCE_DIR").is_some()
    {
        eprintln!("skipped: a shallow clone, or a folder outside the repository");
        return;
    }
    let results = results_folder().canonicalize().unwrap();
    let mut files = Vec::new();
    files_under(&results, &mut files);
    let mut cited: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for path in &files {
        let Ok(text) = fs::read_to_string(path) else { continue };
        for commit in cited_commits(&text) {
            cited.entry(commit).or_default().push(path.strip_prefix(&results).unwrap().display().to_string());
        }
    }
    assert!(!cited.is_empty(), "no commit cited under {}", results.display());
    let missing: Vec<String> = cited
        .iter()
        .filter(|(commit, _)| {
            !git(&["merge-base", "--is-ancestor", commit.as_str(), "HEAD"])
                .is_some_and(|output| output.status.success())
        })
        .map(|(commit, paths)| format!("{commit} (cited in {})", paths.join(", ")))
        .collect();
    assert!(missing.is_empty(), "commits cited under results/ that are not in HEAD's history: {missing:#?}");
}

#[test]
fn cited_commits_are_read_from_lines_that_speak_of_commits() {
    let text =
        "# git commit: 312d1f5-dirty\n# size 1048576 deadbeef12\nbuilt from commit 1a2b3c4d and 5e6f7a8b\n";
    assert_eq!(cited_commits(text), ["312d1f5", "1a2b3c4d", "5e6f7a8b"]);
}
