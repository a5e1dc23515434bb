use super::*;

fn interval(start_s: f64, gbps: f64) -> Interval {
    Interval { start_s, bandwidth_gbps: Some(gbps), nic_errors: 0, pcie_events: Vec::new() }
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
            "interval 2: 40.0% below the median 100.000 Gb/s (level 10%)",
        ]
    );
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
    let intervals = vec![
        interval(0.0, 100.0),
        Interval { start_s: 10.0, bandwidth_gbps: None, nic_errors: 0, pcie_events: vec![] },
    ];
    assert_eq!(judge(&intervals, None, 0).verdict, Verdict::Error);
    assert_eq!(judge(&[], None, 0).verdict, Verdict::Error);
}

#[test]
fn levels_resolve_by_name_or_duration_and_bad_sections_are_refused() {
    let mut check = SoakCheck {
        interval_s: 10.0,
        source: "test".into(),
        max_dip: Some(ten_percent()),
        levels: BTreeMap::from([(
            "r2".to_string(),
            SoakLevel { duration: "2m".into(), source: "DCGM r2".into() },
        )]),
    };
    assert_eq!(check.check(), Ok(()));
    assert_eq!(check.resolve("r2"), Ok((120.0, "level r2: DCGM r2".into())));
    assert_eq!(check.resolve("90s").map(|(seconds, _)| seconds), Ok(90.0));
    assert!(check.resolve("r9").unwrap_err().contains("neither a level of this profile (r2)"));
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
        assert!(soak.max_dip.is_none(), "{name}");
    }
}
