//! `gdrperf slurm` as srun runs it: one process per rank with Slurm's variables, a shared output
//! folder, and a stand-in bench (a shell script) whose exit status we control per node. The real
//! benches over RDMA run in the two Soft-RoCE VMs (scripts/two-host-tests.sh); here we check the
//! orchestration: roles, ports, rounds, records, the gathered files and the failing nodes.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use gdrperf_doctor_fixtures::{FixtureDir, Machine};

/// Stands in for a gdr-* bench: a server (no HOST) prints and exits; a client writes one row
/// with both host names. It fails with a bench-like error on the node named by FAKE_BAD_NODE;
/// with FAKE_FULL_ROWS, every pair with an end on FAKE_SLOW_NODE measures 60 % of its peers, and
/// so does the pair of nodes FAKE_BAD_LINK names ("n2 n7", a bad cable: every time it runs), the
/// pair FAKE_DIP_LINK names the first time it runs only (a moment of congestion: the file
/// FAKE_DIP_MARK is made then), and every pair with one end among FAKE_SLOW_GROUP's nodes and
/// the other outside them at 80 % (a leaf's slow uplinks).
const FAKE_BENCH: &str = r#"#!/bin/sh
csv= json= host= port= token=${GDRPERF_TOKEN:-}
# Whether this client and its server are the two nodes of "$1".
is_pair() {
    set -- $1
    { [ "$SLURMD_NODENAME" = "$1" ] && [ "$host" = "$2" ]; } || { [ "$SLURMD_NODENAME" = "$2" ] && [ "$host" = "$1" ]; }
}
# Whether node "$1" is among FAKE_SLOW_GROUP's.
in_group() {
    for member in ${FAKE_SLOW_GROUP:-}; do [ "$member" = "$1" ] && return 0; done
    return 1
}
while [ $# -gt 0 ]; do
    case $1 in
        -p) port=$2; shift 2 ;;
        --token|--token=*)
            echo "gdr-write-bw: error: the token is on the command line: $*" >&2
            exit 3 ;;
        --csv) csv=$2; shift 2 ;;
        --json) json=$2; shift 2 ;;
        -*) shift ;;
        *) host=$1; shift ;;
    esac
done
echo "fake bench on $SLURMD_NODENAME, port $port, host '$host'"
if [ "$token" != "$FAKE_EXPECT_TOKEN" ]; then
    echo "gdr-write-bw: error: the bench was not given the token" >&2
    exit 2
fi
if [ "$SLURMD_NODENAME" = "$FAKE_BAD_NODE" ]; then
    echo "gdr-write-bw: error: port 1 of mlx5_0 is DOWN" >&2
    exit 2
fi
if [ -n "$host" ] && [ -n "${FAKE_FULL_ROWS:-}" ]; then
    case $SLURMD_NODENAME in n1) bw=100 ;; n2) bw=101 ;; n3) bw=99 ;; *) bw=100.5 ;; esac
    if [ -n "${FAKE_SLOW_NODE:-}" ] && { [ "$SLURMD_NODENAME" = "$FAKE_SLOW_NODE" ] || [ "$host" = "$FAKE_SLOW_NODE" ]; }; then
        bw=60
    fi
    if [ -n "${FAKE_BAD_LINK:-}" ] && is_pair "$FAKE_BAD_LINK"; then
        bw=60
    fi
    if [ -n "${FAKE_DIP_LINK:-}" ] && is_pair "$FAKE_DIP_LINK" && [ ! -e "$FAKE_DIP_MARK" ]; then
        : >"$FAKE_DIP_MARK"
        bw=60
    fi
    if [ -n "${FAKE_SLOW_GROUP:-}" ]; then
        a=0 b=0
        in_group "$SLURMD_NODENAME" && a=1
        in_group "$host" && b=1
        [ "$a" != "$b" ] && bw=80
    fi
    printf 'test,bytes,bidirectional,mem_local,mem_remote,device,peer_device,bw_avg_gbit_s,validation,host,peer_host\n' >"$csv"
    printf 'write_bw,65536,false,host,host,mlx5_0,mlx5_0,%s,pass,%s,%s\n' "$bw" "$SLURMD_NODENAME" "$host" >>"$csv"
elif [ -n "$host" ]; then
    printf 'test,bytes,validation,host,peer_host\nwrite_bw,65536,%s,%s,%s\n' "${FAKE_VALIDATION:-pass}" "$SLURMD_NODENAME" "$host" >"$csv"
    printf '{"metadata":{},"results":[{"test":"write_bw","bytes":65536,"host":"%s","peer_host":"%s"}]}\n' "$SLURMD_NODENAME" "$host" >"$json"
fi
"#;

struct Cluster {
    dir: FixtureDir,
    nodes: Vec<String>,
    nodelist: String,
    /// What follows the bench's path after `--`.
    bench_args: Vec<String>,
}

impl Cluster {
    /// `nodes` nodes named n1..nN, one task each.
    fn new(nodes: usize) -> Cluster {
        let dir = FixtureDir::empty().unwrap();
        let bench = dir.path().join("fake-bench");
        fs::write(&bench, FAKE_BENCH).unwrap();
        Command::new("chmod").arg("755").arg(&bench).status().unwrap();
        Cluster {
            dir,
            nodes: (1..=nodes).map(|n| format!("n{n}")).collect(),
            nodelist: format!("n[1-{nodes}]"),
            bench_args: vec!["--validate".into()],
        }
    }

    fn out(&self) -> PathBuf {
        self.dir.path().join("out")
    }

    /// Starts rank `rank` of the step as srun would.
    fn start(&self, rank: usize, slurm_args: &[&str], env: &[(&str, &str)]) -> Child {
        self.command(rank, slurm_args, env).spawn().unwrap()
    }

    /// Rank `rank`'s command line and environment, as srun would give them; output piped.
    fn command(&self, rank: usize, slurm_args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_gdrperf"));
        command
            .arg("slurm")
            .args(slurm_args)
            .arg("--out")
            .arg(self.out())
            .arg("--")
            .arg(self.dir.path().join("fake-bench"))
            .args(&self.bench_args)
            .env("SLURM_JOB_ID", "4242")
            .env("SLURM_STEP_ID", "0")
            .env("SLURM_PROCID", rank.to_string())
            .env("SLURM_NTASKS", self.nodes.len().to_string())
            .env("SLURM_JOB_NODELIST", &self.nodelist)
            .env("SLURM_TASKS_PER_NODE", format!("1(x{})", self.nodes.len()))
            .env("SLURMD_NODENAME", &self.nodes[rank])
            .env("SLURM_LOCALID", "0")
            .env_remove("GDRPERF_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (name, value) in env {
            command.env(name, value);
        }
        command
    }

    /// Runs the given ranks at once; their outputs in rank order.
    fn run(&self, ranks: &[usize], slurm_args: &[&str], env: &[(&str, &str)]) -> Vec<Output> {
        let children: Vec<Child> = ranks.iter().map(|&rank| self.start(rank, slurm_args, env)).collect();
        children.into_iter().map(|child| child.wait_with_output().unwrap()).collect()
    }
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

#[test]
fn ring_of_four_measures_every_link_and_gathers_one_csv() {
    let cluster = Cluster::new(4);
    let outputs = cluster.run(&[0, 1, 2, 3], &["--schedule", "ring"], &[]);
    for (rank, output) in outputs.iter().enumerate() {
        assert_eq!(output.status.code(), Some(0), "rank {rank}: {}", text(output));
    }
    let rank0 = text(&outputs[0]);
    assert!(rank0.contains("4 pairs: 4 passed, 0 failed"), "{rank0}");
    assert!(rank0.contains("FAILING NODES: none"), "{rank0}");
    // Rank 1 served n3 in round 1 and was the client of n1 in round 0, on the pair's port.
    let rank1 = text(&outputs[1]);
    assert!(rank1.contains("round 0: client with n1 (rank 0) on port 18515: exit 0"), "{rank1}");
    assert!(rank1.contains("round 1: server with n3 (rank 2) on port 18515: exit 0"), "{rank1}");

    let csv = read(&cluster.out().join("results.csv"));
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "test,bytes,validation,host,peer_host,round,server_rank,client_rank,server_node,client_node"
    );
    assert_eq!(lines.len(), 5, "{csv}");
    assert!(lines.contains(&"write_bw,65536,pass,n1,n4,1,3,0,n4,n1"), "{csv}");
    let json: serde_json::Value = serde_json::from_str(&read(&cluster.out().join("results.json"))).unwrap();
    assert_eq!(json["results"].as_array().unwrap().len(), 4);
    assert_eq!(json["pairs"][0]["passed"], true);
    // Rows come by client rank: rank 0 (n1) was the client of n4.
    assert_eq!(json["results"][0]["server_node"], "n4");
    // The client was told the server's node name and the pair's port; its rank's one log has
    // a header line per pair.
    let client_log = read(&cluster.out().join("logs/rank1.log"));
    assert!(client_log.contains("port 18515, host 'n1'"), "{client_log}");
    assert!(client_log.contains("== r0_n1_n2_0-1 client: "), "{client_log}");
    // Rows without a bandwidth column cannot be judged as a fleet: said, and the job stands.
    assert!(rank0.contains("no fleet judgement: ") && rank0.contains("no column `bidirectional`"), "{rank0}");
    assert!(!cluster.out().join("fleet.txt").exists());
}

#[test]
fn rank_zero_judges_the_gathered_rows_as_a_fleet_and_two_nodes_say_what_they_cannot_tell() {
    let ring = Cluster::new(4);
    let outputs = ring.run(&[0, 1, 2, 3], &["--schedule", "ring"], &[("FAKE_FULL_ROWS", "1")]);
    let rank0 = text(&outputs[0]);
    assert_eq!(outputs[0].status.code(), Some(0), "{rank0}");
    let fleet = read(&ring.out().join("fleet.txt"));
    // Since issue 41 the judgement opens with what was read and closes with what to watch, the
    // transient rows and the pairs to retest.
    assert!(fleet.starts_with("INPUT: 1 file(s), 4 rows read, 4 kept; dropped: none\n"), "{fleet}");
    assert!(fleet.contains("\nclass write_bw 65536 B host->host"), "{fleet}");
    assert!(fleet.contains(": 4 rows, level ") && fleet.contains("\nNAMED: none\n"), "{fleet}");
    assert!(
        fleet.ends_with("RETEST (mostly low, too few rows to name a link; run the pair again): none\n"),
        "{fleet}"
    );
    assert!(fleet.contains("\nTRANSIENT: 0 rows "), "{fleet}");
    assert!(!fleet.contains("cannot tell"), "four nodes can name parts: {fleet}");
    assert!(rank0.contains(&fleet) && rank0.contains("fleet judgement (as `gdrperf fleet judge "), "{rank0}");
    let json: serde_json::Value = serde_json::from_str(&read(&ring.out().join("fleet.json"))).unwrap();
    assert_eq!(
        (json["classes"][0]["rows"].as_u64(), json["classes"][0]["nodes"].as_u64()),
        (Some(4), Some(4))
    );

    let pair = Cluster::new(2);
    let outputs = pair.run(&[0, 1], &[], &[("FAKE_FULL_ROWS", "1")]);
    let rank0 = text(&outputs[0]);
    assert_eq!(outputs[0].status.code(), Some(0), "{rank0}");
    let fleet = read(&pair.out().join("fleet.txt"));
    assert!(fleet.contains("\n  cannot tell: 2 node(s): every row joins the same two ends"), "{fleet}");
}

/// Every file under `root`, recursively.
fn files_under(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(root).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn a_token_among_the_bench_arguments_reaches_the_bench_in_its_environment_only() {
    let secret = "s3cretTOKEN";
    let mut cluster = Cluster::new(2);
    cluster.bench_args =
        vec!["--token".into(), secret.into(), "--validate".into(), format!("--token={secret}")];
    let outputs = cluster.run(&[0, 1], &[], &[("FAKE_EXPECT_TOKEN", secret)]);
    for (rank, output) in outputs.iter().enumerate() {
        // The fake bench exits 2 unless GDRPERF_TOKEN holds the token, 3 when a --token is in
        // its argv (where ps and /proc/PID/cmdline show it): the token moved to the environment.
        assert_eq!(output.status.code(), Some(0), "rank {rank}: {}", text(output));
        assert!(!text(output).contains(secret), "rank {rank}: {}", text(output));
        assert!(
            text(output).contains("--token on the command line is visible"),
            "rank {rank}: {}",
            text(output)
        );
    }
    let files = files_under(&cluster.out());
    assert!(files.iter().any(|path| path.ends_with("plan.json")), "{files:?}");
    assert!(
        files.iter().any(|path| path.extension().is_some_and(|e| e == "json")
            && path.parent().is_some_and(|dir| dir.ends_with("status"))),
        "{files:?}"
    );
    for path in &files {
        assert!(!read(path).contains(secret), "{} holds the token:\n{}", path.display(), read(path));
    }
    let plan = read(&cluster.out().join("plan.json"));
    assert!(
        plan.contains("\"--token\",\n    \"<redacted>\"") && plan.contains("--token=<redacted>"),
        "{plan}"
    );
}

#[test]
fn ring_names_the_one_bad_node_and_summary_exits_one() {
    let cluster = Cluster::new(4);
    let outputs = cluster.run(&[0, 1, 2, 3], &["--schedule", "ring"], &[("FAKE_BAD_NODE", "n3")]);
    let rank0 = text(&outputs[0]);
    assert_eq!(outputs[0].status.code(), Some(1), "{rank0}");
    assert!(rank0.contains("FAILING NODES: n3\n"), "{rank0}");
    assert!(rank0.contains("n3: 2 of 2 pairs failed"), "{rank0}");
    assert!(rank0.contains("exit 2: gdr-write-bw: error: port 1 of mlx5_0 is DOWN"), "{rank0}");
    assert_eq!(outputs[2].status.code(), Some(1), "the bad node's own task fails too");

    let summary = Command::new(env!("CARGO_BIN_EXE_gdrperf"))
        .args(["slurm", "summary"])
        .arg(cluster.out())
        .output()
        .unwrap();
    assert_eq!(summary.status.code(), Some(1));
    assert!(text(&summary).contains("FAILING NODES: n3\n"), "{}", text(&summary));
    assert_eq!(read(&cluster.out().join("summary.txt")), String::from_utf8_lossy(&summary.stdout));
}

#[test]
fn pairs_schedule_names_both_ends_and_leaves_the_odd_node_out() {
    let cluster = Cluster::new(5);
    let outputs = cluster.run(&[0, 1, 2, 3, 4], &[], &[("FAKE_VALIDATION", "fail")]);
    let rank0 = text(&outputs[0]);
    assert!(rank0.contains("data check failed at 65536 bytes"), "{rank0}");
    assert!(rank0.contains("FAILING NODES: n1 n2 n3 n4"), "{rank0}");
    assert!(rank0.contains("rerun these with --schedule ring"), "{rank0}");
    assert!(rank0.contains("NOT TESTED: n5"), "{rank0}");
    assert!(text(&outputs[4]).contains("no partner in the pairs schedule"));
}

#[test]
fn a_task_that_never_starts_fails_its_pairs_without_hanging_the_others() {
    let cluster = Cluster::new(4);
    // Rank 2 (n3) waits the whole round timeout for rank 3 in round 0 while rank 1 (n2) waits for
    // rank 2 in round 1: rank 2's heartbeat keeps rank 1 waiting, so only n4 fails (before the
    // heartbeat, rank 1 gave up at the same moment as rank 2, and n3 failed too about 1 run in 6).
    let args = ["--schedule", "ring", "--round-timeout", "6", "--gather-timeout", "8"];
    let outputs = cluster.run(&[0, 1, 2], &args, &[]);
    let rank0 = text(&outputs[0]);
    assert_eq!(outputs[0].status.code(), Some(1), "{rank0}");
    assert!(rank0.contains("ranks 3 did not finish within 8 s"), "{rank0}");
    assert!(rank0.contains("no record from the client (rank 3 on n4)"), "{rank0}");
    assert!(
        text(&outputs[2]).contains("not run: rank 3 (never started) was not ready for round 0"),
        "{}",
        text(&outputs[2])
    );
    assert!(rank0.contains("FAILING NODES: n4"), "{rank0}");
}

#[test]
fn a_folder_of_another_run_is_refused() {
    let cluster = Cluster::new(2);
    cluster.run(&[0, 1], &[], &[]);
    let again = cluster.run(&[0], &[], &[("SLURM_JOB_ID", "4243")]);
    assert_eq!(again[0].status.code(), Some(2));
    assert!(
        text(&again[0]).contains("holds results of run 4242.0, this is run 4243.0"),
        "{}",
        text(&again[0])
    );
}

#[test]
fn every_gpu_gets_its_nearest_nic_on_a_dgx() {
    let machine = FixtureDir::with(&Machine::dgx_h100_like()).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_gdrperf"))
        .args(["slurm", "--dry-run", "--sysfs-root"])
        .arg(machine.path())
        .args(["--", "gdr-write-bw", "--mem", "cuda", "--gpu-bus-id", "{gpu_bus_id}", "-d", "{nic}"])
        .env("SLURM_PROCID", "12")
        .env("SLURM_NTASKS", "16")
        .env("SLURM_JOB_NODELIST", "dgx[01-02]")
        .env("SLURM_TASKS_PER_NODE", "8(x2)")
        .output()
        .unwrap();
    let text = text(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    // Rank 12 is local task 4 of dgx02: the fifth GPU (9d) with mlx5_4, client of dgx01's rank 4.
    assert!(text.contains("rank 12 of 16 on dgx02 (local task 4)"), "{text}");
    // The bench may be named as given or resolved to the copy beside gdrperf (when built).
    let line = text
        .lines()
        .find(|line| line.starts_with("round 0: client with dgx01 (rank 4): "))
        .unwrap_or_default();
    assert!(line.contains("gdr-write-bw --mem cuda --gpu-bus-id 0000:9d:00.0 -d mlx5_4 -p 18519"), "{text}");
}

#[test]
fn bad_invocations_fail_with_a_message() {
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_gdrperf"));
        command.arg("slurm").args(args).env_remove("SLURM_PROCID");
        for (name, value) in env {
            command.env(name, value);
        }
        let output = command.output().unwrap();
        (output.status.code(), text(&output))
    };
    let step = [("SLURM_PROCID", "0"), ("SLURM_NTASKS", "2"), ("SLURM_JOB_NODELIST", "a,b")];
    let (code, message) = run(&["--", "gdr-write-bw"], &[]);
    assert_eq!(code, Some(2));
    assert!(message.contains("SLURM_PROCID is not set: run this under srun"), "{message}");
    let (code, message) = run(&["--dry-run", "--", "gdr-write-bw", "--csv", "x.csv"], &step);
    assert_eq!(code, Some(2));
    assert!(message.contains("each pair's CSV goes to the output folder"), "{message}");
    let (code, message) = run(
        &["--dry-run", "--", "gdr-write-bw"],
        &[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "1"), ("SLURM_JOB_NODELIST", "a[1-")],
    );
    assert_eq!(code, Some(2));
    assert!(message.contains("hostlist \"a[1-\""), "{message}");
    let (code, message) = run(&[], &step);
    assert_eq!(code, Some(2));
    assert!(message.contains("name the bench after `--`"), "{message}");
    let (code, message) = run(&["summary", "/nonexistent/gdrperf"], &[]);
    assert_eq!(code, Some(2));
    assert!(message.contains("holds no plan.json"), "{message}");
}

#[test]
fn hostnames_prints_one_name_per_line() {
    let output = Command::new(env!("CARGO_BIN_EXE_gdrperf"))
        .args(["slurm", "hostnames", "node[01-02,07],gpu-a[1-2]"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "node01\nnode02\nnode07\ngpu-a1\ngpu-a2\n");
    let output = Command::new(env!("CARGO_BIN_EXE_gdrperf"))
        .args(["slurm", "hostnames", "node[3-1]"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).contains("range 3-1 runs backwards"), "{}", text(&output));
}

#[test]
fn a_step_whose_stdout_is_closed_still_runs_and_gathers() {
    // `gdrperf slurm ... | head -1`: the reader has gone before the first line. The step must
    // not panic on the broken pipe (exit 101): its pairs run and rank 0 gathers as usual.
    let cluster = Cluster::new(2);
    let children: Vec<Child> = [0, 1]
        .iter()
        .map(|&rank| {
            let mut command = cluster.command(rank, &["--schedule", "pairs"], &[]);
            let (reader, writer) = std::io::pipe().expect("a pipe");
            drop(reader);
            command.stdout(writer).spawn().unwrap()
        })
        .collect();
    for (rank, child) in children.into_iter().enumerate() {
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("panicked"), "rank {rank}: {stderr}");
        assert_eq!(output.status.code(), Some(0), "rank {rank}: {stderr}");
    }
    let csv = read(&cluster.out().join("results.csv"));
    assert_eq!(csv.lines().filter(|line| line.starts_with("write_bw,65536,pass,")).count(), 1, "{csv}");
}

/// The names of the files under `root`, relative to it, sorted.
fn relative_files(root: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        files_under(root).iter().map(|path| path.strip_prefix(root).unwrap().display().to_string()).collect();
    names.sort();
    names
}

#[test]
fn a_job_writes_three_files_per_rank_and_gathers_every_pairs_rows() {
    let cluster = Cluster::new(6);
    let outputs = cluster.run(&[0, 1, 2, 3, 4, 5], &["--schedule", "all-pairs"], &[("FAKE_FULL_ROWS", "1")]);
    for (rank, output) in outputs.iter().enumerate() {
        assert_eq!(output.status.code(), Some(0), "rank {rank}: {}", text(output));
    }
    // 15 pairs in 5 rounds: a progress file, a records file and a log per rank, whatever the
    // number of pairs, and the job's own files.
    let mut expected: Vec<String> = (0..6)
        .flat_map(|rank| {
            [
                format!("status/rank{rank}.json"),
                format!("status/rank{rank}.records.jsonl"),
                format!("logs/rank{rank}.log"),
            ]
        })
        .chain(
            [
                "plan.json",
                "results.csv",
                "results.json",
                "matrix.csv",
                "summary.txt",
                "fleet.txt",
                "fleet.json",
            ]
            .map(String::from),
        )
        .collect();
    expected.sort();
    assert_eq!(relative_files(&cluster.out()), expected);
    assert!(text(&outputs[0]).contains("15 pairs: 15 passed, 0 failed"), "{}", text(&outputs[0]));

    // plan.json says what the plan is, not its pairs: the schedule, its rounds and pair runs,
    // and per node its pair runs and peers (all-pairs: every node meets the 5 others once).
    let plan: serde_json::Value = serde_json::from_str(&read(&cluster.out().join("plan.json"))).unwrap();
    assert!(plan.get("pairs").is_none(), "{plan}");
    assert_eq!(
        (&plan["schedule"], &plan["rounds"], &plan["pair_runs"], &plan["base_port"]),
        (
            &serde_json::json!("all-pairs"),
            &serde_json::json!(5),
            &serde_json::json!(15),
            &serde_json::json!(18515)
        )
    );
    assert_eq!(plan["tallies"][2], serde_json::json!({"unit": "n3", "pair_runs": 5, "peers": 5}));
    assert_eq!(plan["tasks_per_node"], serde_json::json!([1, 1, 1, 1, 1, 1]));

    // Every pair's row once, with the columns the per-pair files were gathered with: the
    // fake bench's row (the client's bandwidth, both host names) and the pair's round, ranks
    // and nodes, as the gather computed the pairs again from plan.json.
    let results: serde_json::Value =
        serde_json::from_str(&read(&cluster.out().join("results.json"))).unwrap();
    let pairs = results["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 15);
    let bandwidth = |node: &str| match node {
        "n1" => "100",
        "n2" => "101",
        "n3" => "99",
        _ => "100.5",
    };
    let mut expected_rows: Vec<String> = pairs
        .iter()
        .map(|pair| {
            let (server, client) = (pair["server_node"].as_str().unwrap(), pair["client_node"].as_str().unwrap());
            format!(
                "write_bw,65536,false,host,host,mlx5_0,mlx5_0,{},pass,{client},{server},{},{},{},{server},{client}",
                bandwidth(client),
                pair["round"],
                pair["server_rank"],
                pair["client_rank"]
            )
        })
        .collect();
    // Rows come by client rank, then round (each rank's records file read whole in turn, which
    // keeps the gather to one open file): the same order whichever rank finished first.
    let order = |row: &String| {
        let fields: Vec<&str> = row.split(',').collect();
        let number = |at: usize| fields[at].parse::<usize>().unwrap();
        (number(13), number(11))
    };
    expected_rows.sort_by_key(order);
    let csv = read(&cluster.out().join("results.csv"));
    let lines: Vec<String> = csv.lines().skip(1).map(String::from).collect();
    assert_eq!(lines, expected_rows);
    assert_eq!(
        csv.lines().next(),
        Some(
            "test,bytes,bidirectional,mem_local,mem_remote,device,peer_device,bw_avg_gbit_s,validation,host,\
             peer_host,round,server_rank,client_rank,server_node,client_node"
        )
    );
    // The matrix: one line per ordered node pair measured.
    assert_eq!(read(&cluster.out().join("matrix.csv")).lines().count(), 1 + 15);
}

#[test]
fn locate_names_the_one_slow_node_in_a_few_rounds() {
    let cluster = Cluster::new(10);
    let ranks: Vec<usize> = (0..10).collect();
    let env = [("FAKE_FULL_ROWS", "1"), ("FAKE_SLOW_NODE", "n3")];
    let outputs = cluster.run(&ranks, &["--schedule", "locate", "--seed", "2"], &env);
    for (rank, output) in outputs.iter().enumerate() {
        assert_eq!(output.status.code(), Some(0), "rank {rank}: {}", text(output));
    }
    let fleet = read(&cluster.out().join("fleet.txt"));
    assert!(fleet.contains("NAMED: 1\n  NIC port: n3 mlx5_0, "), "{fleet}");
    // The slow node is low with two healthy peers in each role; every other suspect is cleared.
    assert!(
        fleet.contains(
            "  suspect n3: sending LOW with 2 healthy peer(s), receiving LOW with 2 healthy peer(s)\n"
        ),
        "{fleet}"
    );
    assert_eq!(fleet.matches("LOW").count(), 2, "{fleet}");
    assert!(!fleet.contains("unsettled"), "{fleet}");
    // A few rounds and under 60 % of all-pairs' 45 pair runs (9 rounds).
    let line = fleet.lines().find(|line| line.starts_with("locate: ")).unwrap_or_else(|| panic!("{fleet}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let (rounds, pair_runs): (usize, usize) = (words[1].parse().unwrap(), words[6].parse().unwrap());
    assert!(rounds <= 6 && pair_runs * 10 < 45 * 6, "{line}");
    assert!(text(&outputs[0]).contains(line), "{}", text(&outputs[0]));
    // Every rank ran the rounds rank 0 decided, told through locate.json alone.
    let decisions: serde_json::Value =
        serde_json::from_str(&read(&cluster.out().join("locate.json"))).unwrap();
    assert_eq!(decisions["finished"], true);
    assert_eq!(decisions["rounds"].as_array().unwrap().len() + 2, rounds);
    let summary = read(&cluster.out().join("summary.txt"));
    assert!(summary.contains(&format!("{pair_runs} pairs: {pair_runs} passed, 0 failed")), "{summary}");
    assert_eq!(relative_files(&cluster.out()).len(), 3 * 10 + 8);
}

#[test]
fn locate_pairs_a_rank_that_never_started_with_no_one_again() {
    let cluster = Cluster::new(8);
    // Rank 7 (n8) never starts: its two first-pass peers wait one round timeout each, rank 0's
    // barrier after the first pass one more, then n8 is out of every later round.
    let args = ["--schedule", "locate", "--round-timeout", "5", "--gather-timeout", "2"];
    let outputs = cluster.run(&[0, 1, 2, 3, 4, 5, 6], &args, &[("FAKE_FULL_ROWS", "1")]);
    let rank0 = text(&outputs[0]);
    assert_eq!(outputs[0].status.code(), Some(1), "{rank0}");
    assert!(
        rank0.contains("locate: rank 7 (n8) showed nothing for 5 s; paired with no one again"),
        "{rank0}"
    );
    assert!(rank0.contains("\n  stopped answering: n8\n"), "{rank0}");
    let decisions: serde_json::Value =
        serde_json::from_str(&read(&cluster.out().join("locate.json"))).unwrap();
    assert_eq!(decisions["finished"], true);
    let decided: Vec<&serde_json::Value> =
        decisions["rounds"].as_array().unwrap().iter().flat_map(|round| round.as_array().unwrap()).collect();
    assert!(!decided.is_empty(), "n8's peers are re-paired to clear them");
    assert!(decided.iter().all(|pair| pair["server_rank"] != 7 && pair["client_rank"] != 7), "{decisions}");
    // Only n8's two first-pass pairs failed; the judge names the node without rows.
    assert!(rank0.contains("FAILING NODES: n8\n") && rank0.contains("n8: 2 of 2 pairs failed"), "{rank0}");
    let fleet = read(&cluster.out().join("fleet.txt"));
    assert!(fleet.contains("NAMED: 1\n  node without rows: n8: "), "{fleet}");
}

/// The pairs of locate's first round over `nodes` nodes n1..nN with `seed`: what the job
/// measures first, whatever else it does.
fn first_round(nodes: usize, seed: u64) -> Vec<(String, String)> {
    gdrperf_cluster::locate::first_pass(nodes, seed)[0]
        .iter()
        .map(|pair| (format!("n{}", pair.server + 1), format!("n{}", pair.client + 1)))
        .collect()
}

#[test]
fn locate_retests_one_off_deficits_live_a_bad_link_agrees_and_a_dip_does_not() {
    // Ten nodes; on two pairs of the first round, one low row each: a bad link (60 % every time
    // the pair runs) and a dip (60 % the first time only). Each is one low row of one pair, too
    // few to name a link: both are listed to retest once locating has settled, and rank 0 runs
    // them again through locate.json. The bad link's retests agree and it is named; the dip's
    // retest is at full rate and it is counted transient, named nowhere.
    let cluster = Cluster::new(10);
    let first = first_round(10, 2);
    let (bad, dip) = (&first[0], &first[1]);
    let mark = cluster.dir.path().join("dipped");
    let bad_link = format!("{} {}", bad.0, bad.1);
    let dip_link = format!("{} {}", dip.0, dip.1);
    let mark_path = mark.display().to_string();
    let env = [
        ("FAKE_FULL_ROWS", "1"),
        ("FAKE_BAD_LINK", bad_link.as_str()),
        ("FAKE_DIP_LINK", dip_link.as_str()),
        ("FAKE_DIP_MARK", mark_path.as_str()),
    ];
    let ranks: Vec<usize> = (0..10).collect();
    let outputs = cluster.run(&ranks, &["--schedule", "locate", "--seed", "2"], &env);
    for (rank, output) in outputs.iter().enumerate() {
        assert_eq!(output.status.code(), Some(0), "rank {rank}: {}", text(output));
    }
    assert!(mark.exists(), "the dip happened");
    let fleet = read(&cluster.out().join("fleet.txt"));
    let rank0 = text(&outputs[0]);
    // The link, named from agreeing rows; nothing else. No pair is left to retest.
    let named: Vec<&str> = fleet
        .lines()
        .skip_while(|line| !line.starts_with("NAMED: "))
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .collect();
    assert!(fleet.contains("\nNAMED: 1\n"), "{fleet}");
    let link = named[0];
    assert!(link.starts_with("  link: ") && link.contains(&bad.0) && link.contains(&bad.1), "{fleet}");
    assert!(!link.contains(&format!("{} ", dip.0)) && !link.contains(&format!("{} ", dip.1)), "{fleet}");
    assert!(
        fleet.contains("RETEST (mostly low, too few rows to name a link; run the pair again): none\n"),
        "{fleet}"
    );
    // What each retest came to.
    let agreed = |a: &str, b: &str| {
        fleet.lines().any(|line| {
            line.starts_with("  agreed, deficit confirmed: named: ")
                && (line.contains(&format!("{a} mlx5_0 <-> {b} mlx5_0"))
                    || line.contains(&format!("{b} mlx5_0 <-> {a} mlx5_0")))
        })
    };
    assert!(agreed(&bad.0, &bad.1), "{fleet}");
    let transient =
        fleet.lines().find(|line| line.starts_with("  did not agree: transient: ")).unwrap_or_default();
    assert!(
        transient.contains(&dip.0)
            && transient.contains(&dip.1)
            && transient.ends_with("run again 1 time(s)"),
        "{fleet}"
    );
    assert!(
        fleet.contains("RETESTED LIVE: 2 pair(s) listed to retest, run again before the job ended ("),
        "{fleet}"
    );
    assert!(fleet.contains(": 1 agreed (named), 1 did not (transient)\n"), "{fleet}");
    assert!(
        rank0.contains("locate: retest pass 1: 2 pair(s) the fleet judge lists to retest, in 1 round(s)"),
        "{rank0}"
    );
    // The JSON says the same, pair by pair.
    let json: serde_json::Value = serde_json::from_str(&read(&cluster.out().join("fleet.json"))).unwrap();
    let pairs = json["retested"]["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2, "{json}");
    let outcome_of = |node: &str| {
        pairs
            .iter()
            .find(|pair| pair["node"] == node || pair["peer_node"] == node)
            .map(|pair| pair["outcome"].clone())
    };
    assert_eq!(outcome_of(&bad.0), Some(serde_json::json!("agreed")), "{json}");
    assert_eq!(outcome_of(&dip.0), Some(serde_json::json!("did-not-agree")), "{json}");
    assert_eq!(json["verdict"], "fail");
    // The retests ran as locate rounds, told through locate.json: the bad link more than once,
    // each time in the direction it first ran (its server still the server), the dip once; no
    // node in two pairs of a round.
    let decisions: serde_json::Value =
        serde_json::from_str(&read(&cluster.out().join("locate.json"))).unwrap();
    assert_eq!(decisions["finished"], true);
    let rounds = decisions["rounds"].as_array().unwrap();
    let runs_of = |pair: &(String, String)| {
        rounds
            .iter()
            .flat_map(|round| round.as_array().unwrap())
            .filter(|run| {
                (run["server_node"] == pair.0.as_str() && run["client_node"] == pair.1.as_str())
                    || (run["server_node"] == pair.1.as_str() && run["client_node"] == pair.0.as_str())
            })
            .map(|run| run["server_node"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let bad_runs = runs_of(bad);
    assert!(
        bad_runs.len() >= 2 && bad_runs.iter().all(|server| server == &bad.0),
        "{bad_runs:?}: {decisions}"
    );
    assert_eq!(runs_of(dip), std::slice::from_ref(&dip.0), "{decisions}");
    for round in rounds {
        let mut nodes: Vec<&str> = round
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|run| [run["server_node"].as_str().unwrap(), run["client_node"].as_str().unwrap()])
            .collect();
        let all = nodes.len();
        nodes.sort_unstable();
        nodes.dedup();
        assert_eq!(nodes.len(), all, "{round}");
    }
    let summary = read(&cluster.out().join("summary.txt"));
    let line = fleet.lines().find(|line| line.starts_with("locate: ")).unwrap_or_else(|| panic!("{fleet}"));
    let pair_runs: usize = line.split_whitespace().nth(6).unwrap().parse().unwrap();
    assert!(
        summary.contains(&format!("{pair_runs} pairs: {pair_runs} passed, 0 failed")),
        "{line}\n{summary}"
    );
    assert!(
        fleet.contains("  retests: ") && fleet.contains("(in the counts above; at most 16 passes)"),
        "{fleet}"
    );

    // With --no-retest the same job names nothing and lists both pairs to retest.
    let again = Cluster::new(10);
    let mark = again.dir.path().join("dipped");
    let mark_path = mark.display().to_string();
    let env = [
        ("FAKE_FULL_ROWS", "1"),
        ("FAKE_BAD_LINK", bad_link.as_str()),
        ("FAKE_DIP_LINK", dip_link.as_str()),
        ("FAKE_DIP_MARK", mark_path.as_str()),
    ];
    let outputs = again.run(&ranks, &["--schedule", "locate", "--seed", "2", "--no-retest"], &env);
    assert_eq!(outputs[0].status.code(), Some(0), "{}", text(&outputs[0]));
    let fleet = read(&again.out().join("fleet.txt"));
    assert!(
        fleet.contains("\nNAMED: none\n")
            && fleet.contains("RETEST (mostly low, too few rows to name a link; run the pair again): 2\n"),
        "{fleet}"
    );
    assert!(!fleet.contains("RETESTED LIVE") && !fleet.contains("  retests: "), "{fleet}");
}

#[test]
fn a_topology_file_reaches_the_judge_at_the_job_s_end_and_a_bad_one_stops_the_step_first() {
    // Twelve nodes, all pairs, under four leaves of three and a top switch; every pair with one
    // end on leafa (n1-n3) and the other outside at 80 %: the leaf's uplinks, named as one group
    // with its members from the map.
    let cluster = Cluster::new(12);
    let map = cluster.dir.path().join("topology.conf");
    fs::write(
        &map,
        "SwitchName=leafa Nodes=n[1-3]\nSwitchName=leafb Nodes=n[4-6]\nSwitchName=leafc Nodes=n[7-9]\n\
         SwitchName=leafd Nodes=n[10-12]\nSwitchName=top Switches=leafa,leafb,leafc,leafd\n",
    )
    .unwrap();
    let map_arg = map.display().to_string();
    let ranks: Vec<usize> = (0..12).collect();
    let env = [("FAKE_FULL_ROWS", "1"), ("FAKE_SLOW_GROUP", "n1 n2 n3")];
    let outputs = cluster.run(&ranks, &["--schedule", "all-pairs", "--topology", &map_arg], &env);
    for (rank, output) in outputs.iter().enumerate() {
        assert_eq!(output.status.code(), Some(0), "rank {rank}: {}", text(output));
    }
    let fleet = read(&cluster.out().join("fleet.txt"));
    assert!(
        fleet.contains("\nSWITCHES: ")
            && fleet.contains(": 5 switches; 12 of the rows' 12 nodes under one, 0 under none\n"),
        "{fleet}"
    );
    assert!(
        fleet.contains(
            "\nNAMED: 1\n  group of nodes, slow towards the rest: switch leafa on 3 nodes (n1 n2 n3)"
        ),
        "{fleet}"
    );
    assert!(fleet.contains("; grouped by the topology file"), "{fleet}");
    assert!(fleet.contains("\nWATCH (surely slower, under the bar; exit code unchanged): none\n"), "{fleet}");
    let rank0 = text(&outputs[0]);
    assert!(
        rank0.contains(&format!("fleet judgement (as `gdrperf fleet judge --topology {map_arg} ")),
        "{rank0}"
    );
    let json: serde_json::Value = serde_json::from_str(&read(&cluster.out().join("fleet.json"))).unwrap();
    assert_eq!(json["findings"][0]["group_from"], "topology-file", "{json}");

    // A missing file, one that does not parse, and one naming none of the job's nodes: every
    // rank stops with exit 2 before it runs anything (no output folder is made).
    let bad = Cluster::new(2);
    let broken = bad.dir.path().join("broken.conf");
    fs::write(&broken, "SwitchName=s1 Switches=s9\n").unwrap();
    let foreign = bad.dir.path().join("foreign.conf");
    fs::write(&foreign, "SwitchName=s1 Nodes=gpu[1-4]\n").unwrap();
    let missing = bad.dir.path().join("missing.conf");
    for (path, words) in [
        (&missing, "No such file"),
        (&broken, "line 1: switch `s1` holds `s9`, which no line names"),
        (&foreign, "none of the job's 2 nodes is under a switch of it"),
    ] {
        let path = path.display().to_string();
        let outputs = bad.run(&[0, 1], &["--topology", &path], &[("FAKE_FULL_ROWS", "1")]);
        for (rank, output) in outputs.iter().enumerate() {
            assert_eq!(output.status.code(), Some(2), "rank {rank}: {}", text(output));
            let said = text(output);
            assert!(
                said.contains(&format!("--topology {path}"))
                    && said.contains(words)
                    && said.contains("nothing was run"),
                "{said}"
            );
        }
        assert!(!bad.out().exists(), "{path}: the step ran");
        // --dry-run checks it too.
        let dry = bad.command(0, &["--dry-run", "--topology", &path], &[]).output().unwrap();
        assert_eq!(dry.status.code(), Some(2), "{}", text(&dry));
    }
}

#[test]
fn a_gpu_listed_twice_without_a_nic_per_lane_is_refused_before_any_pair_runs() {
    // Written attached (`--gpu=0,0`), as the stand-in bench skips each `-...` word alone.
    let mut cluster = Cluster::new(2);
    cluster.bench_args = vec!["--mem=cuda".into(), "--gpu=0,0".into(), "-dmlx5_0".into()];
    for output in cluster.run(&[0, 1], &[], &[]) {
        let text = text(&output);
        assert_eq!(output.status.code(), Some(2), "{text}");
        assert!(text.contains("lists GPU 0 twice") && text.contains("-d lists 1"), "{text}");
        assert!(!text.contains("fake bench on"), "no bench started: {text}");
    }
    assert!(!cluster.out().exists(), "nothing was started, not even the output folder");
    // A NIC per lane: the same rule as the benches' lets it through to every pair.
    cluster.bench_args[2] = "-dmlx5_0,mlx5_1".into();
    for output in cluster.run(&[0, 1], &[], &[]) {
        assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    }
}
