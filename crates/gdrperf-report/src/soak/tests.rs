use super::*;

fn interval(start_s: f64, gbps: f64) -> Interval {
    Interval {
        start_s,
        bandwidth_gbps: Some(gbps),
        latency_us: None,
        nic_errors: 0,
        nic_error_counters: BTreeMap::new(),
        pcie_events: Vec::new(),
        gpu_events: Vec::new(),
        gpu_held_back: Vec::new(),
    }
}

/// An interval whose error counters moved by these deltas (`nic_errors` their sum, as a row).
fn with_counters(mut interval: Interval, counters: &[(&str, u64)]) -> Interval {
    interval.nic_error_counters = counters.iter().map(|&(name, delta)| (name.to_string(), delta)).collect();
    interval.nic_errors = interval.nic_error_counters.values().sum();
    interval
}

fn ten_percent() -> SourcedValue {
    SourcedValue { value: "10%".into(), source: "test level".into() }
}

#[test]
fn durations_read_as_people_write_them() {
    assert_eq!(parse_duration("90s"), Ok(90.0));
    assert_eq!(parse_duration("15m"), Ok(900.0));
    assert_eq!(parse_duration("1h"), Ok(3600.0));
    assert_eq!(parse_duration("30"), Ok(30.0));
    assert!(parse_duration("soon").is_err() && parse_duration("-5m").is_err() && parse_duration("").is_err());
}

#[test]
fn a_steady_quiet_run_passes() {
    // Medians: 100 of [98, 100, 101, 100, 97] -> worst 97, 3% below: within 10%.
    let intervals: Vec<Interval> = [98.0, 100.0, 101.0, 100.0, 97.0]
        .iter()
        .enumerate()
        .map(|(i, &v)| interval(i as f64 * 10.0, v))
        .collect();
    let stability = judge(&intervals, Some(&ten_percent()), 0);
    assert_eq!(stability.verdict, Verdict::Pass, "{stability:?}");
    assert_eq!(stability.median_gbps, Some(100.0));
    assert_eq!(stability.worst_interval, Some(4));
    assert!((stability.dip_percent.unwrap() - 3.0).abs() < 1e-9);
    assert!(stability.reasons.is_empty());
}

#[test]
fn a_dip_tied_to_retransmissions_and_an_aer_count_fails_and_is_marked() {
    let mut intervals: Vec<Interval> = [100.0, 100.0, 60.0, 100.0, 100.0]
        .iter()
        .enumerate()
        .map(|(i, &v)| interval(i as f64 * 10.0, v))
        .collect();
    intervals[2].nic_errors = 37;
    intervals[3].pcie_events = vec!["0000:17:00.0: AER correctable RxErr 0 -> 12".into()];
    let stability = judge(&intervals, Some(&ten_percent()), 0);
    assert_eq!(stability.verdict, Verdict::Fail);
    assert_eq!(stability.marked, [2, 3]);
    assert_eq!(
        stability.reasons,
        [
            "interval 2 (at 20 s): NIC error counters moved by 37 (allowed 0)",
            "interval 3 (at 30 s): 0000:17:00.0: AER correctable RxErr 0 -> 12",
            "interval 2: 40.0% below the median 100.000 Gb/s (level 10%); in the same interval: NIC error \
             counters moved by 37 (allowed 0)",
        ]
    );
    assert_eq!(stability.worst_interval_moved, ["NIC error counters moved by 37 (allowed 0)"]);
}

#[test]
fn a_gpu_error_fails_the_soak_and_a_gpu_held_at_its_power_cap_only_explains_a_dip() {
    let mut intervals: Vec<Interval> = [100.0, 100.0, 70.0, 100.0, 100.0]
        .iter()
        .enumerate()
        .map(|(i, &v)| interval(i as f64 * 10.0, v))
        .collect();
    intervals[2].gpu_held_back = vec!["clocks held by the power limit for 900 ms".into()];
    // Held back alone: marked and tied to the dip, and the dip (30% > 10%) is what fails.
    let held = judge(&intervals, Some(&ten_percent()), 0);
    assert_eq!(held.verdict, Verdict::Fail);
    assert_eq!(held.marked, [2]);
    assert_eq!(held.worst_interval_moved, ["clocks held by the power limit for 900 ms"]);
    assert_eq!(
        held.reasons,
        ["interval 2: 30.0% below the median 100.000 Gb/s (level 10%); in the same interval: clocks held by \
          the power limit for 900 ms"]
    );
    // Without a dip level the same intervals pass: a power cap is not an error.
    assert_eq!(judge(&intervals, None, 0).verdict, Verdict::Pass);
    // An XID fails the soak whatever the bandwidth did.
    intervals[4].gpu_events =
        vec!["XID 79 (a critical GPU error event; nvidia-smi and dmesg name it)".into()];
    let xid = judge(&intervals, None, 0);
    assert_eq!(xid.verdict, Verdict::Fail);
    assert_eq!(xid.marked, [2, 4]);
    assert_eq!(
        xid.reasons,
        ["interval 4 (at 40 s): XID 79 (a critical GPU error event; nvidia-smi and dmesg name it)"]
    );
}

#[test]
fn loss_switched_on_mid_run_marks_the_lossy_intervals_and_names_their_counters() {
    // The shape of the two-VM test (scripts/soak-loss-test.sh): two clean intervals
    // with Soft-RoCE's few timer retries (within the allowance), then netem drops 2% and every
    // later interval counts sequence NAKs and go-back-N resends, at a fraction of the bandwidth.
    let clean =
        |index: usize| with_counters(interval(index as f64 * 4.0, 0.9), &[("completer_retry_err", 2)]);
    let lossy = |index: usize, gbps: f64, resends: u64| {
        with_counters(
            interval(index as f64 * 4.0, gbps),
            &[("completer_retry_err", resends), ("rcvd_seq_err", resends - 5)],
        )
    };
    let intervals = vec![
        clean(0),
        clean(1),
        lossy(2, 0.05, 90),
        lossy(3, 0.02, 120),
        lossy(4, 0.03, 110),
        lossy(5, 0.02, 130),
    ];
    let stability = judge(&intervals, None, 50);
    assert_eq!(stability.verdict, Verdict::Fail, "{stability:?}");
    assert_eq!(stability.marked, [2, 3, 4, 5]);
    assert_eq!(stability.reasons.len(), 4, "{:?}", stability.reasons);
    assert_eq!(
        stability.reasons[1],
        "interval 3 (at 12 s): NIC error counters moved by 235 (allowed 50): completer_retry_err +120, \
         rcvd_seq_err +115"
    );
    for (reason, index) in stability.reasons.iter().zip(2..) {
        assert!(reason.starts_with(&format!("interval {index} ")), "{reason}");
        assert!(reason.contains("completer_retry_err +") && reason.contains("rcvd_seq_err +"), "{reason}");
    }
    // The worst interval (the first of the 0.02 ones) is tied to what moved in it.
    assert_eq!(stability.worst_interval, Some(3));
    assert_eq!(
        stability.worst_interval_moved,
        [stability.reasons[1].trim_start_matches("interval 3 (at 12 s): ")]
    );
}

#[test]
fn a_dip_where_nothing_moved_says_so() {
    let intervals = vec![interval(0.0, 100.0), interval(10.0, 50.0), interval(20.0, 100.0)];
    let stability = judge(&intervals, Some(&ten_percent()), 0);
    assert_eq!(stability.verdict, Verdict::Fail);
    assert_eq!(
        stability.reasons,
        ["interval 1: 50.0% below the median 100.000 Gb/s (level 10%); nothing else moved in that interval"]
    );
    assert!(stability.worst_interval_moved.is_empty());
}

#[test]
fn nic_errors_within_the_profiles_allowance_do_not_fail_the_soak() {
    let mut intervals = vec![interval(0.0, 100.0), interval(10.0, 100.0)];
    intervals[1].nic_errors = 6;
    assert_eq!(judge(&intervals, None, 50).verdict, Verdict::Pass);
    assert_eq!(judge(&intervals, None, 5).verdict, Verdict::Fail);
}

#[test]
fn without_a_level_the_dip_is_reported_not_judged() {
    let intervals = vec![interval(0.0, 100.0), interval(10.0, 50.0), interval(20.0, 100.0)];
    let stability = judge(&intervals, None, 0);
    assert_eq!(stability.verdict, Verdict::Pass);
    assert_eq!(stability.dip_percent, Some(50.0));
    assert!(stability.level.starts_with("none:"), "{}", stability.level);
}

#[test]
fn a_failed_interval_or_none_at_all_is_an_error() {
    let intervals = vec![interval(0.0, 100.0), Interval { bandwidth_gbps: None, ..interval(10.0, 0.0) }];
    assert_eq!(judge(&intervals, None, 0).verdict, Verdict::Error);
    assert_eq!(judge(&[], None, 0).verdict, Verdict::Error);
}

#[test]
fn levels_resolve_by_name_or_duration_and_bad_sections_are_refused() {
    let mut check = SoakCheck {
        interval_s: 10.0,
        source: "test".into(),
        max_dip: Some(ten_percent()),
        max_rise: Some(SourcedValue { value: "50%".into(), source: "test level".into() }),
        levels: BTreeMap::from([(
            "r2".to_string(),
            SoakLevel { duration: "2m".into(), source: "DCGM r2".into() },
        )]),
    };
    assert_eq!(check.check(), Ok(()));
    assert_eq!(check.resolve("r2"), Ok((120.0, "level r2: DCGM r2".into())));
    assert_eq!(check.resolve("90s").map(|(seconds, _)| seconds), Ok(90.0));
    assert!(check.resolve("r9").unwrap_err().contains("neither a level of this profile (r2)"));
    check.max_rise = Some(SourcedValue { value: "0%".into(), source: "test".into() });
    assert!(check.check().unwrap_err().contains("max_rise \"0%\" is not a percentage above 0%"));
    check.max_rise = Some(SourcedValue { value: "250%".into(), source: " ".into() });
    assert!(check.check().unwrap_err().contains("max_rise: source is empty"));
    check.max_rise = None;
    check.levels.get_mut("r2").unwrap().source = " ".into();
    assert!(check.check().unwrap_err().contains("levels.r2: source is empty"));
}

#[test]
fn built_in_profiles_name_the_dcgm_levels_with_sources() {
    for name in crate::Profile::builtin_names() {
        let soak = crate::Profile::load(name).unwrap().soak.expect("a [soak] section");
        let levels: Vec<&str> = soak.levels.keys().map(String::as_str).collect();
        assert_eq!(levels, ["r1", "r2", "r3", "r4"], "{name}");
        assert_eq!(soak.resolve("r3").unwrap().0, 900.0, "{name}");
        // No document gives a dip level: the profiles say so by leaving it out.
        assert!(soak.max_dip.is_none() && soak.max_rise.is_none(), "{name}");
    }
}

fn latency(start_s: f64, us: f64) -> Interval {
    Interval { bandwidth_gbps: None, latency_us: Some(us), ..interval(start_s, 0.0) }
}

#[test]
fn a_latency_lane_is_judged_on_its_highest_interval_against_the_median() {
    // Median of [2.0, 2.1, 1.9, 3.4, 2.0] is 2.0; the worst is interval 3, (3.4 - 2.0) / 2.0 =
    // 70% above, past a 50% level; a 2.1 us interval alone (5% above) would pass.
    let fifty = SourcedValue { value: "50%".into(), source: "test level".into() };
    let intervals: Vec<Interval> =
        [2.0, 2.1, 1.9, 3.4, 2.0].iter().enumerate().map(|(i, &us)| latency(i as f64 * 10.0, us)).collect();
    let stability = judge_latency(&intervals, Some(&fifty), 0);
    assert_eq!(stability.verdict, Verdict::Fail, "{stability:?}");
    assert_eq!(stability.median_latency_us, Some(2.0));
    assert_eq!(stability.median_gbps, None);
    assert_eq!(stability.worst_interval, Some(3));
    assert!((stability.rise_percent.unwrap() - 70.0).abs() < 1e-9);
    assert_eq!(stability.dip_percent, None);
    assert_eq!(stability.marked, [3]);
    assert_eq!(
        stability.reasons,
        ["interval 3: 70.0% above the median 2.00 us (level 50%); nothing else moved in that interval"]
    );
    let steady: Vec<Interval> =
        [2.0, 2.1, 1.9, 2.0].iter().enumerate().map(|(i, &us)| latency(i as f64 * 10.0, us)).collect();
    let stability = judge_latency(&steady, Some(&fifty), 0);
    assert_eq!(stability.verdict, Verdict::Pass, "{stability:?}");
    assert_eq!(stability.worst_interval, Some(1));
    // Without a level the rise is reported, not judged; a run that measured nothing is an error.
    let stability = judge_latency(&intervals, None, 0);
    assert_eq!(stability.verdict, Verdict::Pass);
    assert!(stability.level.contains("no max_rise, so the rise is reported"), "{}", stability.level);
    let failed = vec![latency(0.0, 2.0), Interval { latency_us: None, ..latency(10.0, 0.0) }];
    assert_eq!(judge_latency(&failed, None, 0).verdict, Verdict::Error);
}

#[test]
fn the_first_of_equally_worst_intervals_is_the_worst() {
    let intervals: Vec<Interval> =
        [100.0, 90.0, 100.0, 90.0].iter().enumerate().map(|(i, &v)| interval(i as f64, v)).collect();
    assert_eq!(judge(&intervals, None, 0).worst_interval, Some(1));
    let intervals: Vec<Interval> =
        [2.0, 3.0, 2.0, 3.0].iter().enumerate().map(|(i, &us)| latency(i as f64, us)).collect();
    assert_eq!(judge_latency(&intervals, None, 0).worst_interval, Some(1));
}
