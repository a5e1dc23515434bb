//! How a size is spelled on any gdrperf command line (the benches' `-s`, `gdrperf copy-bw -s`,
//! `selftest --chunk`): one reader, so a spelling that works for one flag works for all.
//!
//! It takes what perftest's `-s` takes (`src/perftest_parameters.c`: `strtol(text, NULL, 0)`
//! times 1024 or 1024² for a final `K` or `M`) so a perftest command line pastes unchanged:
//! `65536`, `64K`, `1M`, `0x10000`, `+64`. It also takes the spellings gdrperf took before and
//! that perftest does not: any case, `G`, and `KB`, `KiB`, `MB`, `MiB`, `GB`, `GiB`, `B`. All
//! units are binary (1K = 1024), as perftest users mean them.
//!
//! Where perftest reads something else, gdrperf refuses rather than guess: perftest's `strtol`
//! stops at the first character it does not know, so it reads `64KB` as 64 bytes and `1.5M` as
//! 1 MiB; here both are errors (`64KB` is 64 KiB). One spelling reads differently on purpose: a
//! leading zero is octal to `strtol` (`010` is 8 bytes in perftest) and decimal here, as gdrperf
//! always read it; nobody writes a message size in octal.

/// Parses a byte count: decimal digits or `0x` and hexadecimal digits, then an optional binary
/// unit (`K`, `M`, `G`, each also as `KB`/`KiB` and so on, or `B`), in any case, surrounded by
/// any whitespace. Zero parses: each caller says whether a size of zero means something (a
/// bench refuses it in its own validation, with the flag's name); [`parse_nonzero_size`] is the
/// checked form.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let unsigned = trimmed.strip_prefix('+').unwrap_or(trimmed);
    let hexadecimal = unsigned.strip_prefix("0x").or_else(|| unsigned.strip_prefix("0X"));
    let (number, radix) = match hexadecimal {
        Some(digits) => (digits, 16),
        None => (unsigned, 10),
    };
    let digits_end = number.find(|c: char| !c.is_digit(radix)).unwrap_or(number.len());
    let (digits, suffix) = number.split_at(digits_end);
    if digits.is_empty() {
        return Err(format!("'{trimmed}' is not a size (examples: 4096, 64K, 1M)"));
    }
    let shift = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => {
            return Err(format!(
                "'{trimmed}' is not a size: unknown size suffix '{suffix}' (examples: 4096, 64K, 1M)"
            ))
        }
    };
    let value = u64::from_str_radix(digits, radix).map_err(|_| format!("'{trimmed}' is too large"))?;
    value.checked_mul(1 << shift).ok_or_else(|| format!("'{trimmed}' is too large"))
}

/// [`parse_size`] for a flag where zero bytes makes no sense (a copy of nothing, a chunk of
/// nothing): zero is refused with a message saying so.
pub fn parse_nonzero_size(text: &str) -> Result<u64, String> {
    match parse_size(text)? {
        0 => Err("size must be at least 1 byte".to_string()),
        bytes => Ok(bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perftest_spellings_read_as_perftest_reads_them() {
        for (text, bytes) in [
            ("65536", 65536),
            ("64K", 65536),
            ("1M", 1 << 20),
            ("0x10000", 65536),
            ("0X1f", 31),
            ("0x10K", 16 << 10),
            ("+64", 64),
            ("2", 2),
            ("8388608", 8 << 20),
        ] {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
    }

    #[test]
    fn gdrperf_spellings_still_read_the_same() {
        for (text, bytes) in [
            ("4096", 4096),
            ("64k", 65536),
            ("64KiB", 65536),
            ("64KB", 65536),
            ("64kb", 65536),
            ("1m", 1 << 20),
            ("1MiB", 1 << 20),
            ("1MB", 1 << 20),
            ("2G", 2 << 30),
            ("2GiB", 2 << 30),
            (" 7b ", 7),
            ("7B", 7),
            ("010", 10),
            ("0", 0),
        ] {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
    }

    #[test]
    fn what_perftest_would_misread_is_refused() {
        for bad in ["", " ", "-1", "12Q", "K", "1.5M", "0x", "0xK", "+", "++1", "1 K", "64K B", "1T"] {
            assert!(parse_size(bad).is_err(), "{bad:?} parsed as {:?}", parse_size(bad));
        }
        assert_eq!(
            parse_size("12Q"),
            Err("'12Q' is not a size: unknown size suffix 'Q' (examples: 4096, 64K, 1M)".into())
        );
        assert_eq!(parse_size(" K "), Err("'K' is not a size (examples: 4096, 64K, 1M)".into()));
    }

    #[test]
    fn sizes_beyond_64_bits_are_too_large_not_wrapped() {
        for bad in ["99999999999999999999G", "17179869184G", "0x10000000000000000", "0xffffffffffffffffK"] {
            assert_eq!(parse_size(bad), Err(format!("'{bad}' is too large")));
        }
        assert_eq!(parse_size("17179869183G"), Ok(17_179_869_183 << 30));
        assert_eq!(parse_size("0xffffffffffffffff"), Ok(u64::MAX));
    }

    #[test]
    fn the_checked_form_refuses_zero_in_any_spelling_and_passes_the_rest() {
        for zero in ["0", "0K", "0x0", "+0", "0MiB"] {
            assert_eq!(parse_nonzero_size(zero), Err("size must be at least 1 byte".into()), "{zero}");
        }
        assert_eq!(parse_nonzero_size("1"), Ok(1));
        assert_eq!(parse_nonzero_size("64K"), Ok(65536));
        assert!(parse_nonzero_size("12Q").unwrap_err().contains("unknown size suffix"));
    }
}
