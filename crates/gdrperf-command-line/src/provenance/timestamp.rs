//! The wall-clock date a result file records: the benches (run metadata), `gdrperf accept` (its
//! summary) and `gdrperf copy-bw` stamp their files with it.

/// Now, as an RFC 3339 UTC timestamp ("2026-12-02T17:04:05Z"), without a date crate: days since
/// the epoch to a civil date (Howard Hinnant's algorithm).
pub fn utc_timestamp() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|since| since.as_secs())
        .unwrap_or(0);
    let (days, of_day) = ((seconds / 86_400) as i64, seconds % 86_400);
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted - era * 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        of_day / 3600,
        (of_day % 3600) / 60,
        of_day % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn timestamp_has_rfc3339_shape_and_a_plausible_year() {
        let stamp = super::utc_timestamp();
        assert_eq!(stamp.len(), 20, "{stamp}");
        assert!(stamp.ends_with('Z'));
        let year: u32 = stamp[..4].parse().unwrap();
        assert!((2024..2200).contains(&year), "{stamp}");
        assert_eq!(&stamp[4..5], "-");
        assert_eq!(&stamp[10..11], "T");
    }
}
