//! The CUDA half of `--mem cuda-staged`, on a real GPU: the stager the bench engine drives must
//! move the payload out to the bounce buffer the NIC reads, and back in, intact, also with many
//! copies in flight. Skipped (with a note) where there is no libcuda; run on a GPU machine with
//! `cargo test --release -p gdrperf --test cuda_stager`.

use gdrperf::memory::staging::{CudaStager, Stager};
use gdrperf_cuda::{Cuda, GpuSelection};

fn gpu_or_skip() -> Option<gdrperf_cuda::Gpu> {
    if !gdrperf_cuda::libcuda_present() {
        eprintln!("no libcuda here: the CUDA stager is tested on GPU machines");
        return None;
    }
    let cuda = Cuda::load().expect("libcuda loads");
    if cuda.device_count() == 0 {
        eprintln!("libcuda but no GPU: skipped");
        return None;
    }
    let index = cuda.resolve(&GpuSelection::Indices(vec![0])).expect("GPU 0")[0];
    Some(cuda.open_gpu(index).expect("GPU 0 opens"))
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|index| (index as u8).wrapping_mul(31).wrapping_add(seed) | 1).collect()
}

fn bounce_bytes(stager: &dyn Stager, len: usize) -> Vec<u8> {
    let (address, bounce_len) = stager.bounce();
    assert!(len <= bounce_len);
    // SAFETY: the bounce buffer is pinned host memory owned by the stager, alive for this call.
    unsafe { std::slice::from_raw_parts(address as *const u8, len) }.to_vec()
}

fn wait(stager: &mut dyn Stager, copy: gdrperf::memory::staging::CopyId) {
    let started = std::time::Instant::now();
    while !stager.poll(copy).expect("poll") {
        assert!(started.elapsed().as_secs() < 30, "a copy did not finish in 30 s");
    }
}

#[test]
fn payload_goes_out_to_the_bounce_buffer_and_back_in_intact() {
    let Some(gpu) = gpu_or_skip() else { return };
    for len in [1usize, 4096, 1_000_003, 8 << 20] {
        let mut stager = CudaStager::new(&gpu, len, len).expect("stager");
        let data = pattern(len, 7);
        stager.write_payload(&data).expect("fill");
        let copy = stager.begin_out(0..len).expect("out");
        wait(&mut stager, copy);
        assert!(bounce_bytes(&stager, len) == data, "{len} bytes: bounce buffer differs after stage-out");
        stager.write_payload(&vec![0u8; len]).expect("clear");
        let copy = stager.begin_in(0..len).expect("in");
        wait(&mut stager, copy);
        assert!(
            stager.read_payload(len).expect("read") == data,
            "{len} bytes: payload differs after stage-in"
        );
        assert!(stager.log().take_busy() > std::time::Duration::ZERO);
    }
}

#[test]
fn many_copies_in_flight_all_complete_in_order() {
    let Some(gpu) = gpu_or_skip() else { return };
    let len = 1 << 20;
    let mut stager = CudaStager::new(&gpu, len, len).expect("stager");
    stager.write_payload(&pattern(len, 3)).expect("fill");
    // What the bench engine does with a TX depth of 128: start many stage-outs of the same
    // message range ahead of the posts, and retire them oldest first.
    let copies: Vec<_> = (0..128).map(|_| stager.begin_out(0..len).expect("out")).collect();
    for copy in copies {
        wait(&mut stager, copy);
    }
    stager.finish().expect("finish");
    assert!(bounce_bytes(&stager, len) == pattern(len, 3));
    assert!(stager.describe().contains("GPU 0"), "{}", stager.describe());
}
