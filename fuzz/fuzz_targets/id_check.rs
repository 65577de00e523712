#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| lce_testkit::fuzzing::id_check(data));
