//! The console table, laid out like perftest's so its users, and their scripts, read it
//! without a legend: perftest's header, its rows field for field, and its closing rule. What
//! gdrperf says beyond perftest's fields goes to stderr, one `#` line each right after its row,
//! so a terminal shows it in place while a pipe reading stdout sees perftest's table alone.

use std::io::Write;

use crate::error::Result;
use crate::output::exporter::{ConsoleStyle, Exporter, HeaderLine, Row, RunStart};

/// perftest's `RESULT_LINE`: above and below the table.
pub const RULE: &str =
    "---------------------------------------------------------------------------------------";

/// Prints the run header, then one line per size, to stdout.
pub struct Console {
    title: String,
    style: ConsoleStyle,
    /// A table was opened and not yet closed by its rule.
    open: bool,
    /// `--report-both` under `-b`: the directions' tables follow the summed one.
    report_both: bool,
    /// The open table's rows as their two directions (this side's, the peer's), for those tables.
    directions: Vec<[String; 2]>,
}

impl Console {
    pub fn new(title: &str, style: ConsoleStyle) -> Console {
        Console { title: title.to_string(), style, open: false, report_both: false, directions: Vec::new() }
    }

    /// perftest's `--report-both`: after the summed table, a "Local results" and a "Remote
    /// results" table (write_bw.c, read_bw.c, send_bw.c, atomic_bw.c), each with its own header;
    /// nothing where the rows have no directions (without `-b`).
    pub fn reporting_both(mut self, report_both: bool) -> Console {
        self.report_both = report_both;
        self
    }

    /// The directions' tables of the rows since the last, as perftest prints them after its row:
    /// `RESULT_LINE`, "\n Local results: \n", `RESULT_LINE`, the header, the rows, then the same
    /// for the remote side; the caller's closing rule ends the last one.
    fn direction_tables(&mut self, out: &mut impl Write, header: &str) {
        let directions = std::mem::take(&mut self.directions);
        if directions.is_empty() {
            return;
        }
        for (side, title) in ["Local results: ", "Remote results: "].iter().enumerate() {
            let _ = writeln!(out, "{RULE}\n\n {title}\n{RULE}\n{header}");
            for lines in &directions {
                let _ = writeln!(out, "{}", lines[side]);
            }
        }
    }
}

impl<R: Row> Exporter<R> for Console {
    fn start(&mut self, run: &RunStart) -> Result<()> {
        if self.style.figure.is_some() {
            return Ok(());
        }
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{RULE}\n{:^87}", self.title);
        for HeaderLine { name, value, .. } in &run.header {
            let _ = writeln!(out, " {name:<22}: {value}");
        }
        let _ = writeln!(out, "{RULE}\n{}", R::console_header(self.style));
        self.open = true;
        Ok(())
    }

    /// A short header for the next placement: only what changed (memory, GPU, device). Its
    /// rule closes the table before it, as perftest's closing line does.
    fn section(&mut self, run: &RunStart) -> Result<()> {
        if self.style.figure.is_some() {
            return Ok(());
        }
        let mut out = std::io::stdout().lock();
        self.direction_tables(&mut out, &R::console_header(self.style));
        let _ = writeln!(out, "{RULE}");
        for HeaderLine { name, value, .. } in run.header.iter().filter(|line| line.per_placement) {
            let _ = writeln!(out, " {name:<22}: {value}");
        }
        let _ = writeln!(out, "{RULE}\n{}", R::console_header(self.style));
        self.open = true;
        Ok(())
    }

    /// perftest's closing rule under the last row.
    fn finish(&mut self, _outcome: &serde_json::Value) -> Result<()> {
        if std::mem::take(&mut self.open) {
            let mut out = std::io::stdout().lock();
            self.direction_tables(&mut out, &R::console_header(self.style));
            let _ = writeln!(out, "{RULE}");
            let _ = out.flush();
        }
        Ok(())
    }

    fn write_row(&mut self, row: &R) -> Result<()> {
        let mut out = std::io::stdout().lock();
        let line = match self.style.figure {
            // perftest's "%lf\n"; a figure the row lacks was refused before the run.
            Some(figure) => format!("{:.6}", row.perftest_figure(figure, self.style).unwrap_or(f64::NAN)),
            None => row.console_line(self.style),
        };
        // Each `--concurrent` lane has its directions; the lanes' `all` row has none.
        if self.report_both && self.style.figure.is_none() {
            self.directions.extend(row.direction_lines(self.style));
        }
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
        drop(out);
        let notes = row.console_notes(self.style);
        if !notes.is_empty() {
            let mut err = std::io::stderr().lock();
            for note in notes {
                let _ = writeln!(err, " # {note}");
            }
        }
        Ok(())
    }
}

/// A row's console notes: "`bytes` B: " and the short notes joined on one line, then each line
/// of `extra` (a ceiling's "  52.3% of ...", its "     cause: ..." lines, a peak's note), trimmed.
pub(crate) fn notes_of(bytes: u64, first: &[String], extra: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    if !first.is_empty() {
        lines.push(first.join("; "));
    }
    lines.extend(extra.lines().map(str::trim).filter(|line| !line.is_empty()).map(str::to_string));
    match lines.split_first() {
        None => Vec::new(),
        Some((head, rest)) => {
            let mut notes = vec![format!("{bytes} B: {head}")];
            notes.extend(rest.iter().map(|line| format!("  {line}")));
            notes
        }
    }
}
