//! `report.html` of a real acceptance folder (the committed Soft-RoCE run in
//! results/softroce/examples/acceptance), copied and spiked with hostile peer strings: the
//! page is self-contained, escapes what it shows, and its manifest checks the files.

use std::path::{Path, PathBuf};

use gdrperf_report::manifest;
use gdrperf_report::report_html::{self, external_references, manifest_text};

/// A copy of the committed acceptance folder, removed on drop.
struct Folder(PathBuf);

impl Folder {
    fn copy_of_the_softroce_run(name: &str) -> Folder {
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results/softroce/examples/acceptance");
        let target = std::env::temp_dir().join(format!("gdrperf-report-html-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&target);
        copy(&source, &target);
        Folder(target)
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            copy(&entry.path(), &to.join(entry.file_name()));
        } else {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

/// Reads the JSON file at `path`, lets `edit` change it, and writes it back.
fn edit_json(path: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut value: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    edit(&mut value);
    std::fs::write(path, serde_json::to_string_pretty(&value).unwrap()).unwrap();
}

const HOSTILE: &str = "<script>alert(1)</script><img src=http://evil.example/x.png>";

/// Puts markup where a peer or a bench could: the host name, a row's detail, the inventory.
fn spike(folder: &Path) {
    edit_json(&folder.join("summary.json"), |summary| {
        summary["metadata"]["host"] = HOSTILE.into();
        summary["results"][1]["detail"] = format!("peer said {HOSTILE}").into();
    });
    let inventory = serde_json::json!({
        "node": {"hostname": HOSTILE, "kernel": "6.1.0-18-amd64", "nics": [{"name": "rxe0", "kind": "rxe",
                 "board_id": "\" onmouseover=\"x", "ports": [], "pci": null}], "gpus": [], "paths": []},
        "cuda": {"version": null, "absent": "libcuda.so.1 not found"},
    });
    std::fs::write(folder.join("inventory.json"), inventory.to_string()).unwrap();
}

#[test]
fn the_report_puts_the_verdict_first_and_plots_every_test() {
    let folder = Folder::copy_of_the_softroce_run("plots");
    let html = report_html::render(&folder.0).unwrap();
    let verdict = html.find("<div class=\"verdict PASS\">PASS</div>").expect("the verdict");
    assert!(verdict < html.find("<h2 id=\"tests\">Tests</h2>").unwrap());
    // Bandwidth over size: a line and its point; latency: seven statistics as bars.
    assert!(html.contains("<polyline points=") && html.contains("<title>64 KiB: 0.422</title>"), "{html}");
    assert_eq!(html.matches("<rect x=").count() - html.matches("fill=\"#fafafa\"").count(), 7);
    assert!(html.contains("no hardware ceiling (software device)"));
    assert!(html.contains("smoke test, no document: only a stalled run"), "threshold sources are shown");
    assert!(html.contains("gdr-write-bw") && html.contains("gdrperf accept --profile softroce-smoke"));
    assert!(html.contains("QEMU Standard PC"), "the committed run's inventory is shown");
    assert!(external_references(&html).is_empty(), "{:?}", external_references(&html));
    // A folder written before gdrperf kept an inventory says it has none.
    std::fs::remove_file(folder.0.join("inventory.json")).unwrap();
    let html = report_html::render(&folder.0).unwrap();
    assert!(html.contains("No inventory.json in this folder"), "{html}");
}

/// The page reads the benches' files through the one reader of result files: a file it would
/// refuse elsewhere (here a negative latency, which would pass every limit) is named
/// unreadable, not plotted from, and a summary that is no result file is an error naming it.
#[test]
fn a_damaged_result_file_is_named_not_plotted_and_a_summary_without_rows_is_an_error() {
    let folder = Folder::copy_of_the_softroce_run("damaged");
    edit_json(&folder.0.join("read_lat-host-rxe0.json"), |result| {
        result["results"][0]["t_min_us"] = (-1.0).into()
    });
    let html = report_html::render(&folder.0).unwrap();
    assert!(html.contains("No result file to plot (read_lat-host-rxe0.json unreadable)."), "{html}");
    assert!(html.contains("<polyline points="), "the bandwidth file still plots");
    let summary = folder.0.join("summary.json");
    std::fs::write(&summary, r#"{"metadata": {}, "overall": "pass"}"#).unwrap();
    let error = report_html::render(&folder.0).unwrap_err().to_string();
    assert!(error.contains("summary.json") && error.contains("no \"results\" array"), "{error}");
}

/// Folders written before JSON took the exit-code contract's words spell verdicts PASS/SKIP; a
/// folder of today spells them pass/undecided/fail/error. Both read back, each word shown and
/// styled as what it means.
#[test]
fn a_summary_in_the_contract_words_reads_like_one_in_the_older_words() {
    let folder = Folder::copy_of_the_softroce_run("words");
    let path = folder.0.join("summary.json");
    let mut summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    summary["overall"] = "undecided".into();
    summary["results"][0]["verdict"] = "pass".into();
    summary["results"][1]["verdict"] = "undecided".into();
    std::fs::write(&path, serde_json::to_string_pretty(&summary).unwrap()).unwrap();
    let html = report_html::render(&folder.0).unwrap();
    assert!(html.contains("<div class=\"verdict UNDECIDED\">UNDECIDED</div>"), "{html}");
    assert!(
        html.contains("<td class=\"PASS\">PASS</td>")
            && html.contains("<td class=\"UNDECIDED\">UNDECIDED</td>")
    );
    assert!(html.contains(" pass, 0 fail, 1 undecided (not run), 0 error of "), "{html}");
    summary["overall"] = "no such word".into();
    std::fs::write(&path, serde_json::to_string_pretty(&summary).unwrap()).unwrap();
    let html = report_html::render(&folder.0).unwrap();
    assert!(
        html.contains("<div class=\"verdict ERROR\">ERROR</div>"),
        "an unknown word is never shown as a pass"
    );
}

#[test]
fn peer_strings_are_escaped_and_nothing_outside_the_file_is_referenced() {
    let folder = Folder::copy_of_the_softroce_run("escape");
    spike(&folder.0);
    let html = report_html::render(&folder.0).unwrap();
    assert!(!html.contains("<script") && !html.contains("<img"), "raw markup leaked");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!html.contains("\" onmouseover=\""), "attribute quote leaked");
    assert!(html.contains("absent: libcuda.so.1 not found"));
    assert_eq!(external_references(&html), Vec::<String>::new());
}

#[test]
fn the_reference_check_catches_what_a_browser_would_fetch() {
    for page in [
        "<img src=\"http://x/y.png\">",
        "<a href='https://x'>x</a>",
        "<style>@import 'x.css';</style>",
        "<div style=\"background:url(http://x)\"></div>",
        "<script>1</script>",
        "<link rel=stylesheet href=x.css>",
    ] {
        assert!(!external_references(page).is_empty(), "{page}");
    }
    for page in [
        "<img src=\"data:image/png;base64,AA\">",
        "<a href=\"#manifest\">m</a>",
        "<p>src=http://x as text</p>",
    ] {
        assert!(external_references(page).is_empty(), "{page}: {:?}", external_references(page));
    }
}

#[test]
fn the_manifest_in_the_page_verifies_the_files_and_catches_a_change() {
    let folder = Folder::copy_of_the_softroce_run("manifest");
    let written = report_html::write(&folder.0).unwrap();
    let html = std::fs::read_to_string(&written.path).unwrap();
    assert_eq!(written.sha256, manifest::sha256_hex(html.as_bytes()), "the page's own digest");
    assert!(written.describe().contains(&written.sha256) && written.describe().contains("not who made them"));
    assert!(html.contains("It does not prove who made them"), "the page says what its manifest proves");
    let text = manifest_text(&html).unwrap();
    // Every file but the report, the HDR histograms in their sub-folder included.
    let files = manifest::manifest(&folder.0, &[report_html::FILE_NAME]).unwrap();
    assert_eq!(text.lines().count(), files.len());
    assert!(text.contains("  read_lat-host-rxe0-hdr/read_lat-2B.hdr\n"), "{text}");
    assert!(!text.contains(report_html::FILE_NAME));
    assert_eq!(manifest::verify(&folder.0, &text, &[report_html::FILE_NAME]), Vec::<String>::new());
    std::fs::write(folder.0.join("write_bw-host-rxe0.csv"), "edited\n").unwrap();
    assert_eq!(
        manifest::verify(&folder.0, &text, &[report_html::FILE_NAME]),
        ["write_bw-host-rxe0.csv: changed since the report was written"]
    );
}

/// Issue 44: `gdrperf report` overwrote the file a link planted at `report.html` pointed to.
#[test]
fn a_link_planted_at_report_html_is_refused_and_its_target_untouched() {
    let folder = Folder::copy_of_the_softroce_run("planted");
    let victim = folder.0.join("victim.txt");
    std::fs::write(&victim, "mine\n").unwrap();
    let _ = std::fs::remove_file(folder.0.join(report_html::FILE_NAME));
    std::os::unix::fs::symlink(&victim, folder.0.join(report_html::FILE_NAME)).unwrap();
    let error = report_html::write(&folder.0).unwrap_err().to_string();
    assert!(error.contains("symbolic link"), "{error}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine\n", "the link was followed");
}

/// Issue 44 item 8: a summary's `result_file` naming a file outside the folder (absolute or
/// `..`) was read and shown; item 5: a symlinked summary.json was shown but left out of the
/// manifest. Now the page refuses the link and reads nothing outside the folder.
#[test]
fn the_page_reads_only_regular_files_inside_the_folder() {
    let folder = Folder::copy_of_the_softroce_run("outside");
    let secret = folder.0.with_extension("secret.json");
    std::fs::write(&secret, r#"{"metadata": {"argv": ["SECRET-ARGV"]}, "results": []}"#).unwrap();
    let path = folder.0.join("summary.json");
    let mut summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    summary["results"][0]["result_file"] = secret.to_str().unwrap().into();
    let outside = format!("../{}", secret.file_name().unwrap().to_str().unwrap());
    summary["results"][1]["result_file"] = outside.into();
    std::fs::write(&path, serde_json::to_string_pretty(&summary).unwrap()).unwrap();
    let html = report_html::render(&folder.0).unwrap();
    assert!(!html.contains("SECRET-ARGV"), "a file outside the folder was read");
    assert!(html.contains("Content-Security-Policy") && html.contains("default-src 'none'"), "a CSP meta");
    // summary.json as a link to a copy outside: refused, not shown unlisted.
    let copy = folder.0.with_extension("summary.json");
    std::fs::rename(&path, &copy).unwrap();
    std::os::unix::fs::symlink(&copy, &path).unwrap();
    let error = report_html::render(&folder.0).unwrap_err().to_string();
    assert!(error.contains("summary.json") && error.contains("symbolic link"), "{error}");
    std::fs::remove_file(&secret).unwrap();
    std::fs::remove_file(&copy).unwrap();
}
