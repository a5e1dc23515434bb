//! `gdrperf fleet judge` and `simulate` as a user runs them: the built binary on a gathered
//! results file written here (the columns rank 0 writes, read by name), and its exit codes.

mod common;

use common::{text, Scratch};

/// `gdrperf` with no extra environment.
fn gdrperf(args: &[&str]) -> std::process::Output {
    common::gdrperf(args, &[])
}

/// Six nodes, every ordered pair once, one port each; `slow` at 60 % with every peer. Rows
/// alternate 1 % above and below 100 Gb/s; a `lane` = all row and a latency-style row with no
/// bandwidth are there to be skipped.
fn gathered(slow: Option<usize>) -> String {
    let mut csv = String::from("# command: gdrperf slurm -- gdr-write-bw -s 1048576\n");
    csv.push_str("test,bytes,bidirectional,qps,mem_local,mem_remote,device,peer_device,gpu_local_bus_id,lane,bw_avg_gbit_s,ceiling_gbps,round,server_rank,client_rank,server_node,client_node\n");
    for server in 0..6 {
        for client in 0..6 {
            if server == client {
                continue;
            }
            let base = if Some(server) == slow || Some(client) == slow { 60.0 } else { 100.0 };
            let gbps = base * if (server + client) % 2 == 0 { 0.99 } else { 1.01 };
            csv.push_str(&format!(
                "write_bw,1048576,false,1,host,host,mlx5_0,mlx5_0,,0,{gbps:.3},105,0,{server},{client},n{server},n{client}\n"
            ));
        }
    }
    csv.push_str("write_bw,1048576,false,1,host,host,mlx5_0,mlx5_0,,all,1.0,105,0,0,1,n0,n1\n");
    csv.push_str("write_bw,1048576,false,1,host,host,mlx5_0,mlx5_0,,0,,105,0,0,1,n0,n1\n");
    csv
}

#[test]
fn a_slow_node_and_a_node_without_rows_are_named_with_exit_1() {
    let scratch = Scratch::new("slow");
    let results = scratch.write("results.csv", &gathered(Some(3)));
    scratch.write("plan.json", r#"{"nodes": ["n0", "n1", "n2", "n3", "n4", "n5", "n6"]}"#);
    let json = scratch.0.join("fleet.json").display().to_string();
    let output = gdrperf(&["fleet", "judge", &results, "--json", &json]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let out = text(&output);
    assert!(out.contains("NIC port: n3 mlx5_0"), "{out}");
    assert!(out.contains("node without rows: n6"), "{out}");
    assert!(out.contains("NAMED: 2"), "{out}");
    let verdict: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(verdict["findings"].as_array().unwrap().len(), 2);
    assert_eq!(verdict["verdict"], "fail", "the exit-code contract's word for 1");
    assert_eq!(verdict["classes"][0]["rows"], 30);
}

#[test]
fn a_healthy_fleet_exits_0_and_a_far_ceiling_exits_1() {
    let scratch = Scratch::new("healthy");
    let results = scratch.write("results.csv", &gathered(None));
    let output = gdrperf(&["fleet", "judge", &results]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(text(&output).contains("NAMED: none"));
    let far = scratch.write("far.csv", &gathered(None).replace(",105,", ",160,"));
    let output = gdrperf(&["fleet", "judge", &far]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(text(&output).contains("class below its ceiling"), "{}", text(&output));
}

#[test]
fn unreadable_input_and_bad_flags_exit_2() {
    let scratch = Scratch::new("bad");
    let no_column = scratch.write("bench.csv", "test,bytes\nwrite_bw,65536\n");
    let output = gdrperf(&["fleet", "judge", &no_column]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(text(&output).contains("no column `bidirectional`"), "{}", text(&output));
    let output = gdrperf(&["fleet", "judge", "/nonexistent/results.csv"]);
    assert_eq!(output.status.code(), Some(2));
    let output = gdrperf(&["fleet", "simulate", "--nodes", "16", "--fault", "slow-nic"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).contains("--fault slow-nic"), "{}", text(&output));
    let output = gdrperf(&["fleet", "judge", "--min-deficit", "150", &no_column]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn simulate_names_the_planted_faults_of_a_small_fleet() {
    let output = gdrperf(&[
        "fleet",
        "simulate",
        "--nodes",
        "32",
        "--lanes",
        "2",
        "--schedule",
        "locate",
        "--seeds",
        "2",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(
        text(&output)
            .contains("every planted part named: 100.0 % of seeds; anything else named: 0.0 % of seeds"),
        "{}",
        text(&output)
    );
}

#[test]
fn against_a_base_a_recovered_node_exits_1_and_the_same_job_exits_0() {
    // In the base n3 ran at 60 % with every peer; now it is healthy: the judge names nothing
    // now, but --base names n3's port faster (1/0.6 - 1: +67 %), which alone makes exit 1.
    let scratch = Scratch::new("base");
    let earlier = scratch.write("earlier.csv", &gathered(Some(3)));
    let results = scratch.write("results.csv", &gathered(None));
    let json = scratch.0.join("fleet.json").display().to_string();
    let output = gdrperf(&["fleet", "judge", "--base", &earlier, &results, "--json", &json]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let out = text(&output);
    assert!(out.contains("NAMED: none"), "{out}");
    assert!(out.contains("MOVED: 1") && out.contains("faster: n3 mlx5_0"), "{out}");
    let verdict: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(verdict["base"]["movements"][0]["kind"], "faster");
    assert_eq!(verdict["verdict"], "fail", "a part that moved is a miss, though none is named");
    let output = gdrperf(&["fleet", "judge", "--base", &results, &results, "--json", &json]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(text(&output).contains("MOVED: none"), "{}", text(&output));
    let verdict: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(verdict["verdict"], "pass");
    let output = gdrperf(&["fleet", "judge", "--base", "/nonexistent/results.csv", &results]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
}

#[test]
fn simulate_writes_a_job_that_judge_reads() {
    let scratch = Scratch::new("write");
    let dir = scratch.0.join("job").display().to_string();
    let output = gdrperf(&[
        "fleet",
        "simulate",
        "--nodes",
        "12",
        "--lanes",
        "2",
        "--schedule",
        "all-pairs",
        "--write",
        &dir,
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    // Five planted faults (a dead node among them, named through the plan.json written beside).
    let output = gdrperf(&["fleet", "judge", &format!("{dir}/results.csv")]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        text(&output).contains("NAMED: 5") && text(&output).contains("node without rows"),
        "{}",
        text(&output)
    );
    assert!(std::fs::read_to_string(format!("{dir}/matrix.csv"))
        .unwrap()
        .starts_with("client_node,server_node,lane,bytes,bw_avg_gbit_s,client_device,server_device\n"));
    let output = gdrperf(&["fleet", "simulate", "--seeds", "2", "--write", &dir]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
}

#[test]
fn a_switch_map_names_half_the_fleet_behind_a_slow_switch_as_one_group() {
    // Eight nodes, n0-n3 under leafa and n4-n7 under leafb, every row between the halves at 80 %
    // (32 of 56): leafa's crossing rows against the rest (within each half) are 20 % below; leafb
    // is its complement: one group. Without the map nothing is a group.
    let mut csv = String::from("test,bytes,bidirectional,qps,mem_local,mem_remote,device,peer_device,gpu_local_bus_id,lane,bw_avg_gbit_s,ceiling_gbps,round,server_rank,client_rank,server_node,client_node\n");
    for server in 0..8 {
        for client in (0..8).filter(|&client| client != server) {
            let base = if (server < 4) != (client < 4) { 80.0 } else { 100.0 };
            let gbps = base * if (server + client) % 2 == 0 { 0.99 } else { 1.01 };
            csv.push_str(&format!(
                "write_bw,1048576,false,1,host,host,mlx5_0,mlx5_0,,0,{gbps:.3},,0,{server},{client},n{server},n{client}\n"
            ));
        }
    }
    let scratch = Scratch::new("switches");
    let results = scratch.write("results.csv", &csv);
    let map =
        scratch.write("topology.conf", "SwitchName=leafa Nodes=n[0-3]\nSwitchName=leafb Nodes=n[4-7]\n");
    let output = gdrperf(&["fleet", "judge", &results, "--topology", &map]);
    let out = text(&output);
    assert_eq!(output.status.code(), Some(1), "{out}");
    assert!(
        out.contains("group of nodes, slow towards the rest: switch leafa on 4 nodes (n0 n1 n2 n3)"),
        "{out}"
    );
    assert!(!out.contains("switch leafb"), "{out}");
    assert!(out.contains("SWITCHES: ") && out.contains("8 of the rows' 8 nodes under one"), "{out}");
    assert!(!text(&gdrperf(&["fleet", "judge", &results])).contains("group of nodes"));
    // A map that names none of the rows' nodes, or none at all, is refused.
    let foreign = scratch.write("foreign.conf", "SwitchName=s1 Nodes=gpu[1-4]\n");
    let output = gdrperf(&["fleet", "judge", &results, "--topology", &foreign]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(text(&output).contains("none of the rows' 8 nodes"), "{}", text(&output));
    let broken = scratch.write("broken.conf", "SwitchName=s1 Switches=s9\n");
    let output = gdrperf(&["fleet", "judge", &results, "--topology", &broken]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(text(&output).contains("line 1") && text(&output).contains("`s9`"), "{}", text(&output));
}

#[test]
fn simulate_writes_its_fabric_s_topology_conf_and_judge_names_the_slow_half_from_it() {
    // 32 nodes (leaves of 3 under two spines), all pairs, the first half at 80 % with the other:
    // the job written with its switch map; judged with it, spine0 is one group (exit 1); judged
    // without it, no group is named.
    let scratch = Scratch::new("write-map");
    let dir = scratch.0.join("job").display().to_string();
    let output = gdrperf(&[
        "fleet",
        "simulate",
        "--nodes",
        "32",
        "--lanes",
        "2",
        "--schedule",
        "all-pairs",
        "--fault",
        "slow-half",
        "--switch-map",
        "--write",
        &dir,
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(text(&output).contains("topology.conf"), "{}", text(&output));
    let results = format!("{dir}/results.csv");
    let output = gdrperf(&["fleet", "judge", &results, "--topology", &format!("{dir}/topology.conf")]);
    let out = text(&output);
    assert_eq!(output.status.code(), Some(1), "{out}");
    assert!(out.contains("group of nodes, slow towards the rest: switch spine0 on 15 nodes"), "{out}");
    assert!(out.contains("NAMED: 1"), "{out}");
    assert!(!text(&gdrperf(&["fleet", "judge", &results])).contains("group of nodes"));
}

#[test]
fn groups_from_rack_names_are_tested_as_switches_and_say_where_they_came_from() {
    // 64 nodes named by the simulated fabric (su0r000n00: spine, leaf of 4, node), all pairs, one
    // leaf at 80 % towards the rest: judged with no map, the names give 16 leaves and 2 halves,
    // and the leaf is named as its name group. With --no-name-groups the same leaf is inferred
    // from the pair matrix among the nodes named; either way the report says where it came from.
    let scratch = Scratch::new("rack-names");
    let dir = scratch.0.join("job").display().to_string();
    let output = gdrperf(&[
        "fleet",
        "simulate",
        "--nodes",
        "64",
        "--lanes",
        "2",
        "--schedule",
        "all-pairs",
        "--fault",
        "slow-group",
        "--rack-names",
        "--write",
        &dir,
    ]);
    let out = text(&output);
    assert_eq!(output.status.code(), Some(0), "{out}");
    assert!(out.contains("node names by rack") && out.contains("\n1,true,false,"), "{out}");
    let results = format!("{dir}/results.csv");
    let output = gdrperf(&["fleet", "judge", &results]);
    let out = text(&output);
    assert_eq!(output.status.code(), Some(1), "{out}");
    assert!(
        out.contains("GROUPS FROM NODE NAMES: 18 groups, tested as switches (16 at level 0 (su0r000 su0r001"),
        "{out}"
    );
    assert!(out.contains("2 at level 1 (su0 su1)"), "{out}");
    let line =
        out.lines().find(|line| line.contains("group of nodes, slow towards the rest")).unwrap_or_default();
    assert!(
        line.contains(": group su")
            && line.contains(" on 4 nodes (")
            && line.contains("; grouped by the node names, z "),
        "{out}"
    );
    assert!(out.contains("NAMED: 1\n"), "{out}");
    let output = gdrperf(&["fleet", "judge", &results, "--no-name-groups"]);
    let out = text(&output);
    assert_eq!(output.status.code(), Some(1), "{out}");
    assert!(!out.contains("GROUPS FROM NODE NAMES"), "{out}");
    assert!(
        out.contains(" on 4 nodes (")
            && out.contains("grouped by the pair matrix (inferred among the nodes named)"),
        "{out}"
    );
}
