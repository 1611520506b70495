//! Batches filtered on a stream the caller owns (`engine::cuda::stream_call`), as Python's
//! device calls use it: results equal to the CPU engine at 8, 10 and 16 bits, float32 values
//! near a float64 reference, no host wait before the stream runs, and buffers that are not
//! this GPU's memory refused. Ignored without a GPU.

use rand::{Rng, SeedableRng};

use convstream_core::CpuEngine;
use convstream_core::Mask;
use convstream_core::{open_cuda_device, SampleValues};
use convstream_core::{BorderMode, FilterSpec, PlaneSelection};
use convstream_core::{DeviceBatch, DeviceCallError, StreamFilter};
use convstream_core::{Frame, PixelFormat, PixelLayout, Plane};

const SPECS: [&str; 4] = ["gaussian:size=13,sigma=3", "sharpen", "sobel", "box:size=31"];

/// `planes` random planes of `bits`-bit samples (little-endian words above 8 bits), packed.
fn random_planes(rng: &mut impl Rng, planes: usize, height: usize, width: usize, bits: u8) -> Vec<u8> {
    let bytes = if bits > 8 { 2 } else { 1 };
    let mut data = vec![0u8; planes * height * width * bytes];
    if bytes == 1 {
        rng.fill(&mut data[..]);
    } else {
        for word in data.chunks_exact_mut(2) {
            word.copy_from_slice(&rng.gen_range(0..(1u32 << bits)).to_le_bytes()[..2]);
        }
    }
    data
}

/// The CPU engine's result for each packed plane of `data`.
fn cpu_engine(filter: &FilterSpec, data: &[u8], height: usize, width: usize, bits: u8) -> Vec<u8> {
    let format = PixelFormat::new(PixelLayout::Gray, bits).expect("a gray depth");
    let shape = format.plane_shapes(width, height)[0];
    let plane_bytes = height * width * shape.depth.bytes();
    let mut out = Vec::with_capacity(data.len());
    for source in data.chunks_exact(plane_bytes) {
        let mut plane = Plane::new(shape);
        for y in 0..height {
            let row = plane.row_mut(y);
            let len = row.len();
            row.copy_from_slice(&source[y * len..(y + 1) * len]);
        }
        let filtered = CpuEngine::filter_frame(filter, &Frame::of_planes(format, width, height, vec![plane]));
        for y in 0..height {
            out.extend_from_slice(filtered.planes[0].row(y));
        }
    }
    out
}

fn spec(mask: &str, border: BorderMode) -> FilterSpec {
    FilterSpec::uniform(Mask::from_spec(mask).expect("a preset"), border, PlaneSelection::All)
}

#[test]
#[ignore = "needs a GPU: run with --include-ignored on a GPU host"]
fn batches_on_the_callers_stream_match_the_cpu_engine() {
    let context = open_cuda_device(0).expect("a GPU");
    let stream = context.new_stream().expect("a stream");
    let mut rng = rand::rngs::StdRng::seed_from_u64(41);
    let (planes, height, width) = (3, 67, 129);
    for bits in [8u8, 10, 16] {
        let data = random_planes(&mut rng, planes, height, width, bits);
        let source = stream.clone_htod(&data).expect("upload");
        let mut output = stream.alloc_zeros::<u8>(data.len()).expect("output");
        let depth = PixelFormat::new(PixelLayout::Gray, bits).expect("depth").sample_depth();
        let pitch = width * depth.bytes();
        for border in BorderMode::ALL {
            for mask in SPECS {
                let filter = spec(mask, border);
                let mut ours = StreamFilter::new(filter.mask.clone(), border, 0).expect("a stream filter");
                let (src, _guard) = cudarc::driver::DevicePtr::device_ptr(&source, &stream);
                let (dst, _guard2) = cudarc::driver::DevicePtrMut::device_ptr_mut(&mut output, &stream);
                let batch = DeviceBatch {
                    src,
                    dst,
                    width,
                    channels: 1,
                    height,
                    src_pitch: pitch,
                    src_pixel: depth.bytes(),
                    dst_pitch: pitch,
                    planes,
                    src_plane: pitch * height,
                    dst_plane: pitch * height,
                    values: SampleValues::Integer,
                    depth,
                };
                ours.launch(&batch, stream.cu_stream() as u64, false).expect("queued");
                drop((_guard, _guard2));
                let result = stream.clone_dtoh(&output).expect("download");
                assert_eq!(
                    result,
                    cpu_engine(&filter, &data, height, width, bits),
                    "{mask}, {border:?}, {bits} bits"
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a GPU: run with --include-ignored on a GPU host"]
fn float_values_and_refusals() {
    let context = open_cuda_device(0).expect("a GPU");
    let stream = context.new_stream().expect("a stream");
    let (height, width) = (40usize, 70usize);
    let values: Vec<f32> = (0..height * width).map(|i| (i % 97) as f32 * 0.5 - 7.0).collect();
    let source = stream.clone_htod(&values).expect("upload");
    let mut output = stream.alloc_zeros::<f32>(values.len()).expect("output");
    let mask = Mask::from_spec("custom:matrix=[[1,2,1],[0,0,0],[-1,-2,-1]],bias=3").expect("a mask");
    let mut ours = StreamFilter::new(mask, BorderMode::Nearest, 0).expect("a stream filter");
    let (src, guard) = cudarc::driver::DevicePtr::device_ptr(&source, &stream);
    let (dst, guard2) = cudarc::driver::DevicePtrMut::device_ptr_mut(&mut output, &stream);
    let batch = DeviceBatch {
        src,
        dst,
        width,
        channels: 1,
        height,
        src_pitch: width * 4,
        src_pixel: 4,
        dst_pitch: width * 4,
        planes: 1,
        src_plane: 0,
        dst_plane: 0,
        values: SampleValues::Float32,
        depth: convstream_core::SampleDepth::EIGHT,
    };
    ours.launch(&batch, stream.cu_stream() as u64, true).expect("filtered");
    // A buffer too small for its planes, and host memory, are refused before any launch.
    let too_many = DeviceBatch {
        planes: 2,
        src_plane: width * height * 4,
        ..batch
    };
    assert!(matches!(
        ours.launch(&too_many, stream.cu_stream() as u64, false),
        Err(DeviceCallError::Refused(_))
    ));
    let host = DeviceBatch {
        dst: values.as_ptr() as u64,
        ..batch
    };
    assert!(matches!(
        ours.launch(&host, stream.cu_stream() as u64, false),
        Err(DeviceCallError::Refused(_))
    ));
    drop((guard, guard2));
    let result = stream.clone_dtoh(&output).expect("download");
    // convolution orientation: the mask turned half way; nearest border.
    let at = |y: isize, x: isize| {
        values[(y.clamp(0, height as isize - 1) as usize) * width + x.clamp(0, width as isize - 1) as usize] as f64
    };
    let taps = [[-1.0, -2.0, -1.0], [0.0, 0.0, 0.0], [1.0, 2.0, 1.0]];
    for y in 0..height as isize {
        for x in 0..width as isize {
            let mut sum = 3.0;
            for (i, row) in taps.iter().enumerate() {
                for (j, tap) in row.iter().enumerate() {
                    sum += tap * at(y + i as isize - 1, x + j as isize - 1);
                }
            }
            let ours = result[y as usize * width + x as usize] as f64;
            assert!((ours - sum).abs() < 1e-3, "({x}, {y}): {ours} against {sum}");
        }
    }
}

/// Channels-last images (H x W x C, C of 2 to 4, as CV-CUDA's NHWC tensors hold them) are
/// filtered in one launch a batch with each channel as the channel filtered alone as a
/// plane, bit for bit: 8-bit samples and float32 values, every border; the output poisoned
/// first, so a sample left unwritten shows.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a GPU host"]
fn channels_last_images_equal_each_channel_filtered_as_a_plane() {
    let context = open_cuda_device(0).expect("a GPU");
    let stream = context.new_stream().expect("a stream");
    let mut rng = rand::rngs::StdRng::seed_from_u64(63);
    let (images, height, width) = (2usize, 45usize, 77usize);
    for (values, bytes) in [(SampleValues::Integer, 1usize), (SampleValues::Float32, 4)] {
        for channels in [2usize, 3, 4] {
            let samples = images * height * width * channels;
            let data: Vec<u8> = match values {
                SampleValues::Float32 => (0..samples)
                    .flat_map(|_| (rng.gen_range(-300.0f32..300.0)).to_ne_bytes())
                    .collect(),
                _ => (0..samples).map(|_| rng.gen::<u8>()).collect(),
            };
            // The same samples as planes: image n's channel c is plane n * channels + c.
            let mut planar = vec![0u8; data.len()];
            for n in 0..images {
                for c in 0..channels {
                    for i in 0..height * width {
                        let from = ((n * height * width + i) * channels + c) * bytes;
                        let to = (((n * channels + c) * height * width) + i) * bytes;
                        planar[to..to + bytes].copy_from_slice(&data[from..from + bytes]);
                    }
                }
            }
            let source = stream.clone_htod(&data).expect("upload");
            let planar_source = stream.clone_htod(&planar).expect("upload");
            for border in BorderMode::ALL {
                for mask in SPECS {
                    let filter = spec(mask, border);
                    let mut ours = StreamFilter::new(filter.mask.clone(), border, 0).expect("a stream filter");
                    let poison = vec![0xA5u8; data.len()];
                    let mut interleaved_out = stream.clone_htod(&poison).expect("output");
                    let mut planar_out = stream.clone_htod(&poison).expect("output");
                    let launch = |ours: &mut StreamFilter, src, dst, channels: usize, planes: usize| {
                        let row = width * channels * bytes;
                        let batch = DeviceBatch {
                            src,
                            dst,
                            width,
                            channels,
                            height,
                            src_pitch: row,
                            src_pixel: channels * bytes,
                            dst_pitch: row,
                            planes,
                            src_plane: row * height,
                            dst_plane: row * height,
                            values,
                            depth: convstream_core::SampleDepth::EIGHT,
                        };
                        ours.launch(&batch, stream.cu_stream() as u64, true).expect("filtered");
                    };
                    {
                        let (src, _g) = cudarc::driver::DevicePtr::device_ptr(&source, &stream);
                        let (dst, _g2) = cudarc::driver::DevicePtrMut::device_ptr_mut(&mut interleaved_out, &stream);
                        launch(&mut ours, src, dst, channels, images);
                    }
                    {
                        let (src, _g) = cudarc::driver::DevicePtr::device_ptr(&planar_source, &stream);
                        let (dst, _g2) = cudarc::driver::DevicePtrMut::device_ptr_mut(&mut planar_out, &stream);
                        launch(&mut ours, src, dst, 1, images * channels);
                    }
                    let interleaved = stream.clone_dtoh(&interleaved_out).expect("download");
                    let planes = stream.clone_dtoh(&planar_out).expect("download");
                    for n in 0..images {
                        for c in 0..channels {
                            for i in 0..height * width {
                                let from = ((n * height * width + i) * channels + c) * bytes;
                                let to = (((n * channels + c) * height * width) + i) * bytes;
                                assert_eq!(
                                    interleaved[from..from + bytes],
                                    planes[to..to + bytes],
                                    "{mask}, {border:?}, {channels} channels of {values:?}, image {n}, channel {c}, sample {i}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A source whose pixels are apart (every other column, as `x[:, ::2]` gives) or whose rows
/// and pixels are swapped (a transposed view) is read where it is: the samples of the packed
/// copy, the output poisoned first.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a GPU host"]
fn strided_and_transposed_sources_equal_their_packed_copies() {
    let context = open_cuda_device(0).expect("a GPU");
    let stream = context.new_stream().expect("a stream");
    let mut rng = rand::rngs::StdRng::seed_from_u64(64);
    let (height, width) = (37usize, 53usize);
    // A 2 x wide plane of which every other column is the view.
    let wide: Vec<u8> = (0..height * width * 2).map(|_| rng.gen::<u8>()).collect();
    let packed: Vec<u8> = (0..height * width)
        .map(|i| wide[(i / width) * width * 2 + (i % width) * 2])
        .collect();
    // The transposed view of a width x height plane: rows 1 byte apart, pixels `height` apart.
    let transposed_store: Vec<u8> = (0..width * height)
        .map(|i| packed[(i % height) * width + i / height])
        .collect();
    for border in BorderMode::ALL {
        for mask in SPECS {
            let filter = spec(mask, border);
            let mut ours = StreamFilter::new(filter.mask.clone(), border, 0).expect("a stream filter");
            let want = cpu_engine(&filter, &packed, height, width, 8);
            for (data, src_pitch, src_pixel) in [(&wide, width * 2, 2), (&transposed_store, 1, height)] {
                let source = stream.clone_htod(data).expect("upload");
                let mut output = stream.clone_htod(&vec![0xA5u8; height * width]).expect("output");
                {
                    let (src, _g) = cudarc::driver::DevicePtr::device_ptr(&source, &stream);
                    let (dst, _g2) = cudarc::driver::DevicePtrMut::device_ptr_mut(&mut output, &stream);
                    let batch = DeviceBatch {
                        src,
                        dst,
                        width,
                        channels: 1,
                        height,
                        src_pitch,
                        src_pixel,
                        dst_pitch: width,
                        planes: 1,
                        src_plane: 0,
                        dst_plane: 0,
                        values: SampleValues::Integer,
                        depth: convstream_core::SampleDepth::EIGHT,
                    };
                    ours.launch(&batch, stream.cu_stream() as u64, true).expect("filtered");
                }
                let got = stream.clone_dtoh(&output).expect("download");
                assert_eq!(
                    got, want,
                    "{mask}, {border:?}, rows {src_pitch} and pixels {src_pixel} bytes apart"
                );
            }
        }
    }
}
