//! Bytes as a peer could send them, through the same decoder `Control::receive` uses: the frame
//! length check, then the JSON body. Any panic, overflow or out-of-memory is a finding; an
//! accepted message must also survive its own round trip.

#![no_main]

use gdrperf::exchange::{decode_body, decode_frame, encode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(Some((message, used))) = decode_frame(data) {
        assert!(used <= data.len());
        let again = encode(&message);
        assert!(
            matches!(decode_frame(&again), Ok(Some(_))),
            "a decoded message must encode to a decodable frame"
        );
    }
    let _ = decode_body(data);
});
