//! The native module of the `convstream` Python package (`convstream._convstream`): filters
//! for arrays (`filter.rs` for NumPy arrays, taken as the arrays themselves and checked in
//! `host_array.rs`; `device_call.rs` for GPU arrays, by device address, checked against the
//! driver), decoded video as an iterator and `run` (`video.rs`), and the mask catalogue. The
//! public API, its argument checks and the arrays of NumPy, CuPy and PyTorch live in
//! python/convstream/__init__.py; this side releases the GIL while it works.

mod device_call;
mod filter;
mod host_array;
mod interrupt;
mod settings;
mod video;

use convstream_core::{preset_list, show_spec, Mask, SpecRefused, PRESETS};
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

create_exception!(
    _convstream,
    GpuUnavailableError,
    PyRuntimeError,
    "No usable GPU (or CUDA support not built in): the message is the one `convstream run --device cuda` prints."
);

/// The presets `convstream masks` lists: `(name, keys, summary)` each.
#[pyfunction]
fn presets() -> Vec<(String, Vec<String>, String)> {
    PRESETS
        .iter()
        .map(|p| {
            (
                p.name.to_string(),
                p.keys.iter().map(|k| k.to_string()).collect(),
                p.summary.to_string(),
            )
        })
        .collect()
}

/// What `convstream masks` prints: the preset list.
#[pyfunction]
fn masks_text() -> String {
    preset_list()
}

/// What `convstream masks show SPEC` prints: the matrix, the taps as written for
/// `mode=correlate`, and warnings.
#[pyfunction]
fn show_mask(spec: &str) -> PyResult<String> {
    show_spec(spec).map_err(|refused| PyValueError::new_err(refused.to_string()))
}

/// A mask's coefficients in convolution orientation (as `scipy.ndimage.convolve` takes
/// them), rows of floats, with its bias in 8-bit units, whether it is separable (rank one,
/// filtered in a row and a column pass) and its description: `(rows, bias, separable,
/// description)`.
#[pyfunction]
fn mask_coefficients(spec: &str) -> PyResult<(Vec<Vec<f32>>, f32, bool, String)> {
    let mask =
        Mask::from_spec(spec).map_err(|errors| PyValueError::new_err(SpecRefused::new(spec, errors).to_string()))?;
    let rows = mask.coefficients().chunks(mask.width()).map(<[f32]>::to_vec).collect();
    Ok((rows, mask.bias(), mask.is_separable(), mask.description().to_string()))
}

/// Waits (at most 3 s, the GIL released) for GPU set-up threads still at work, as the
/// command line does before it exits: called at interpreter exit, because a process that
/// exits while a thread is inside the driver's initialisation can be aborted by it.
#[pyfunction]
fn wait_for_gpu_starts(py: Python<'_>) -> bool {
    py.detach(|| convstream_core::wait_for_gpu_starts(std::time::Duration::from_secs(3)))
}

#[pymodule]
fn _convstream(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // `vf=` and configs' `filter.graph` are read with libavfilter, as the CLI reads them.
    convstream_media::install_graph_reader();
    m.add("GpuUnavailableError", m.py().get_type::<GpuUnavailableError>())?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(masks_text, m)?)?;
    m.add_function(wrap_pyfunction!(show_mask, m)?)?;
    m.add_function(wrap_pyfunction!(mask_coefficients, m)?)?;
    m.add_function(wrap_pyfunction!(wait_for_gpu_starts, m)?)?;
    m.add_class::<filter::NativeFilter>()?;
    m.add_class::<device_call::NativeStreamFilter>()?;
    video::register(m)?;
    m.add("CUDA_BUILT", cfg!(feature = "cuda"))?;
    Ok(())
}
