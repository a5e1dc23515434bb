//! Lanes with a NIC each (issue 43 item 2): `--concurrent -d simulated0,simulated1` runs one lane
//! per simulated device, and `--gpu 0,0` puts two such lanes on one GPU. Without a GPU here, the
//! GPU case shows the options are accepted (the run gets as far as loading CUDA); on a GPU host
//! it runs and the header says the lanes share GPU 0. Decisions only: exit status, message, rows
//! kept, the columns the settings decide, the data check.

mod common;

use common::{rows, run, Scratch, NIC};

#[test]
fn two_lanes_on_two_simulated_devices_write_a_row_each_and_an_aggregate() {
    let scratch = Scratch::new("two-devices");
    for binary in ["gdr-write-bw", "gdr-send-bw"] {
        let csv = scratch.file(&format!("{binary}.csv"));
        let arguments = [
            "--loopback",
            "--concurrent",
            "-d",
            "simulated0,simulated1",
            "-s",
            "65536",
            "-n",
            "50",
            "--validate",
            "--csv",
            &csv,
        ];
        let (code, output) = run(binary, &arguments, NIC);
        assert_eq!(code, 0, "{binary}: {output}");
        assert!(output.contains("Lanes"), "{binary}: the header lists the lanes: {output}");
        assert!(output.contains("simulated0") && output.contains("simulated1"), "{binary}: {output}");
        assert!(!output.contains("share GPU"), "{binary}: host memory shares no GPU: {output}");
        let rows = rows(&csv);
        let lane_and_device: Vec<(&str, &str)> =
            rows.iter().map(|row| (row["lane"].as_str(), row["device"].as_str())).collect();
        assert_eq!(
            lane_and_device,
            [("0", "simulated0"), ("1", "simulated1"), ("all", "simulated0+simulated1")],
            "{binary}: each lane on its own device: {output}"
        );
        for row in &rows {
            assert_eq!(row["validation"], "pass", "{binary}: {row:?}");
        }
    }
}

#[test]
fn two_lanes_on_one_gpu_with_a_nic_each_are_accepted() {
    let scratch = Scratch::new("one-gpu");
    let csv = scratch.file("write-bw.csv");
    let arguments = [
        "--loopback",
        "--concurrent",
        "-d",
        "simulated0,simulated1",
        "--mem",
        "cuda",
        "--gpu",
        "0,0",
        "-s",
        "65536",
        "-n",
        "50",
        "--validate",
        "--csv",
        &csv,
    ];
    let (code, output) = run("gdr-write-bw", &arguments, NIC);
    assert!(!output.contains("twice"), "the options are accepted: {output}");
    if !gdrperf_cuda::libcuda_present() {
        // No CUDA here: the options passed and the run stopped at loading CUDA, exit 2.
        assert_eq!(code, 2, "{output}");
        assert!(output.contains("libcuda.so not found"), "{output}");
    } else if output.contains("no CUDA GPU is visible") {
        // A driver without a card.
        assert_eq!(code, 2, "{output}");
    } else {
        // A GPU host: both lanes ran on GPU 0, each through its own device, and the header says
        // they share it.
        assert_eq!(code, 0, "{output}");
        assert!(output.contains("lanes 0+1 share GPU 0"), "{output}");
        let devices: Vec<String> = rows(&csv).iter().map(|row| row["device"].clone()).collect();
        assert_eq!(devices, ["simulated0", "simulated1", "simulated0+simulated1"], "{output}");
    }
}
