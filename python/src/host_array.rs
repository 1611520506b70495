//! Host arrays as `NativeFilter.filter_host` takes them: the NumPy arrays themselves, never
//! addresses, so a call from Python cannot point the filter at memory no array owns. An
//! array's place in memory is read from NumPy's own `__array_interface__` of an object whose
//! type is exactly `numpy.ndarray` (a subclass, or any other object, could answer with any
//! address); the buffer protocol would say the same, but the wheel is built for the stable
//! ABI of Python 3.9, which leaves it out. Here the arrays' shapes, sample types, layout,
//! writability and separation are checked, and the planes of a call laid out; memory the
//! filter needs beside them is taken with [`try_zeroed`], which refuses with `MemoryError`
//! instead of ending the process.

use pyo3::exceptions::{PyMemoryError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

/// How an array's samples are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Samples {
    U8,
    U16,
    F32,
}

impl Samples {
    /// Bytes a sample takes.
    pub fn bytes(self) -> usize {
        match self {
            Samples::U8 => 1,
            Samples::U16 => 2,
            Samples::F32 => 4,
        }
    }

    /// The sample type of NumPy's type string (`|u1`, `<u2`, `<f4`): native byte order only
    /// (`|` for single bytes, which have none).
    fn of_typestr(typestr: &str) -> Option<Samples> {
        let native = if cfg!(target_endian = "little") { "<" } else { ">" };
        match typestr.split_at_checked(1)? {
            ("|", "u1") => Some(Samples::U8),
            (order, "u1") if order == native => Some(Samples::U8),
            (order, "u2") if order == native => Some(Samples::U16),
            (order, "f4") if order == native => Some(Samples::F32),
            _ => None,
        }
    }
}

/// One C-contiguous NumPy array as NumPy describes it.
struct HostArray {
    address: usize,
    shape: Vec<usize>,
    samples: Samples,
    readonly: bool,
    /// Bytes from the first sample to just past the last.
    len: usize,
}

impl HostArray {
    /// The array `array`, passed as the argument `name`.
    fn of(array: &Bound<'_, PyAny>, name: &str) -> PyResult<HostArray> {
        let ndarray = array.py().import("numpy")?.getattr("ndarray")?;
        if !array.get_type().is(&ndarray) {
            return Err(PyTypeError::new_err(format!(
                "{name}: takes a numpy.ndarray, not {}",
                array.get_type().name()?
            )));
        }
        let interface = array.getattr("__array_interface__")?;
        let interface = interface.cast::<PyDict>()?;
        let item = |key: &str| -> PyResult<Bound<'_, PyAny>> {
            interface
                .get_item(key)?
                .ok_or_else(|| PyValueError::new_err(format!("{name}: its __array_interface__ lacks {key:?}")))
        };
        if !item("strides")?.is_none() {
            return Err(PyValueError::new_err(format!(
                "{name}: the array is not C-contiguous; pass numpy.ascontiguousarray(a)"
            )));
        }
        let typestr: String = item("typestr")?.extract()?;
        let samples = Samples::of_typestr(&typestr).ok_or_else(|| {
            PyTypeError::new_err(format!(
                "{name}: takes native-order uint8, uint16 or float32 samples, not {typestr}"
            ))
        })?;
        let data = item("data")?;
        let data = data.cast::<PyTuple>()?;
        let (address, readonly): (usize, bool) = data.extract()?;
        let shape: Vec<usize> = item("shape")?.extract()?;
        let len = shape
            .iter()
            .try_fold(samples.bytes(), |bytes, n| bytes.checked_mul(*n))
            .ok_or_else(|| PyValueError::new_err(format!("{name}: shape {shape:?} is larger than memory")))?;
        Ok(HostArray {
            address,
            shape,
            samples,
            readonly,
            len,
        })
    }

    /// Whether the two arrays share any byte.
    fn overlaps(&self, other: &HostArray) -> bool {
        self.len > 0
            && other.len > 0
            && self.address < other.address + other.len
            && other.address < self.address + self.len
    }
}

/// One plane's place in memory: `rows` rows `row_pitch` bytes apart, samples `sample_pitch`
/// bytes apart within a row (the channel count times the sample size, for a channel of an
/// interleaved H x W x C array).
#[derive(Debug, Clone, Copy)]
pub struct PlaneAt {
    pub address: usize,
    pub row_pitch: usize,
    pub sample_pitch: usize,
}

/// The planes of one call: each `(source, destination)` pair is `height x width` samples
/// at the same pitches, every byte of it inside its array.
pub struct HostPlanes {
    pub height: usize,
    pub width: usize,
    pub samples: Samples,
    pub places: Vec<(PlaneAt, PlaneAt)>,
}

/// The planes of `source` to filter into `out`: `channels` of a 2-D plane (`[0]`), of an
/// H x W x C array or of each image of an (N, C, H, W) batch. Refuses, naming the argument,
/// anything but two C-contiguous NumPy arrays of one shape and sample type, `out` writable
/// and apart from `source`, and channels outside the array.
pub fn host_planes(source: &Bound<'_, PyAny>, out: &Bound<'_, PyAny>, channels: &[usize]) -> PyResult<HostPlanes> {
    let from = HostArray::of(source, "source")?;
    let to = HostArray::of(out, "out")?;
    if to.shape != from.shape || to.samples != from.samples {
        return Err(PyValueError::new_err(format!(
            "out: shape {:?} of {:?} samples differs from the source's {:?} of {:?}",
            to.shape, to.samples, from.shape, from.samples
        )));
    }
    if to.readonly {
        return Err(PyValueError::new_err("out: the array is read-only"));
    }
    if from.overlaps(&to) {
        return Err(PyValueError::new_err("out: shares memory with the source"));
    }
    let bytes = from.samples.bytes();
    // (height, width, channel count, planes per image, bytes between images' planes)
    let (height, width, count, offsets): (usize, usize, usize, Vec<usize>) = match from.shape[..] {
        [height, width] => (height, width, 1, vec![0]),
        [height, width, count] => (height, width, count, vec![0]),
        [batch, count, height, width] => {
            let image = count * height * width * bytes;
            (height, width, count, (0..batch).map(|n| n * image).collect())
        }
        _ => {
            return Err(PyValueError::new_err(format!(
                "source: a 2-D plane, an H x W x C array or an (N, C, H, W) batch, not shape {:?}",
                from.shape
            )))
        }
    };
    if let Some(c) = channels.iter().find(|c| **c >= count) {
        return Err(PyValueError::new_err(format!(
            "channels: channel {c} is not in an array of {count} channel(s)"
        )));
    }
    let mut planes = HostPlanes {
        height,
        width,
        samples: from.samples,
        places: Vec::new(),
    };
    if from.len == 0 {
        return Ok(planes);
    }
    let interleaved = from.shape.len() == 3;
    let (row_pitch, sample_pitch) = if interleaved {
        (width * count * bytes, count * bytes)
    } else {
        (width * bytes, bytes)
    };
    let mut selected = channels.to_vec();
    selected.sort_unstable();
    selected.dedup();
    let planes_wanted = offsets.len() * selected.len();
    planes
        .places
        .try_reserve_exact(planes_wanted)
        .map_err(|_| PyMemoryError::new_err(format!("{planes_wanted} planes are more than memory holds")))?;
    for image in offsets {
        for &c in &selected {
            // A channel of an interleaved array starts `c` samples into its rows; a plane of
            // a batch is the `c`-th of its image.
            let offset = image
                + if interleaved {
                    c * bytes
                } else {
                    c * height * width * bytes
                };
            let at = |array: &HostArray| PlaneAt {
                address: array.address + offset,
                row_pitch,
                sample_pitch,
            };
            planes.places.push((at(&from), at(&to)));
        }
    }
    Ok(planes)
}

/// `len` values of `T::default()`, or `MemoryError` naming `what` where the memory cannot be
/// had: an allocation that fails the ordinary way ends the process.
pub fn try_zeroed<T: Clone + Default>(len: usize, what: impl FnOnce() -> String) -> PyResult<Vec<T>> {
    let mut values = Vec::new();
    if values.try_reserve_exact(len).is_err() {
        return Err(PyMemoryError::new_err(format!(
            "{}: {len} values of {} bytes are more than can be had",
            what(),
            std::mem::size_of::<T>()
        )));
    }
    values.resize(len, T::default());
    Ok(values)
}
