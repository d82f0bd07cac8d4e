//! `tuneplane.collector._native`: the TensorBoard reader's hot loop for a whole buffer in
//! one call. `frames` frames the records (CRC-32C checked, damage and resynchronisation as
//! `tfrecord.scan`) and reads the one-`simple_value` Summary events into columns; any other
//! record is left to the Python path (`tbevents.decode`) by its index.

mod framing;
mod simple;

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

/// One good record of the buffer: its place and, for a simple event, its point.
struct Row {
    tag: Option<usize>, // index into `tags`; None: not a simple event with a name as its tag
    step: i64,
    wall_time: f64,
    value: f64,
}

/// The points of one tag among some simple events, in read order.
struct Columns {
    tag: usize,
    steps: Vec<i64>,
    wall_times: Vec<f64>,
    values: Vec<f64>,
}

/// The records of one buffer: damage, where the next scan resumes, and the points.
#[pyclass(frozen, module = "tuneplane.collector._native")]
struct Frames {
    buffer: Py<PyBytes>,
    base: u64,
    records: Vec<framing::Record>,
    rows: Vec<Row>,
    damaged: Vec<(u64, i64)>, // (offset, bytes skipped; -1 for a record whose data CRC failed)
    #[pyo3(get)]
    tags: Vec<String>,
    #[pyo3(get)]
    consumed: usize,
    #[pyo3(get)]
    wanted: usize,
}

#[pymethods]
impl Frames {
    /// Good records framed.
    #[getter]
    fn count(&self) -> usize {
        self.records.len()
    }

    /// (file offset, bytes skipped or -1 for a bad data CRC) of each damaged place.
    #[getter]
    fn damage(&self) -> Vec<(u64, i64)> {
        self.damaged.clone()
    }

    /// The record's file offset.
    fn offset(&self, index: usize) -> u64 {
        self.base + self.records[index].pos as u64
    }

    /// The record's data.
    fn data<'py>(&self, py: Python<'py>, index: usize) -> Bound<'py, PyBytes> {
        let record = &self.records[index];
        let bytes = self.buffer.bind(py).as_bytes();
        PyBytes::new(py, &bytes[record.start..record.start + record.length])
    }

    /// The step of a simple event.
    fn step(&self, index: usize) -> i64 {
        self.rows[index].step
    }

    /// The records in order as (first, end, simple): each run of simple events whose steps do
    /// not go down, and each other record on its own.
    fn segments(&self) -> Vec<(usize, usize, bool)> {
        let mut out = Vec::new();
        let mut first = 0;
        for (index, row) in self.rows.iter().enumerate() {
            let joins = row.tag.is_some()
                && index > first
                && self.rows[index - 1].tag.is_some()
                && row.step >= self.rows[index - 1].step;
            if index > first && !joins {
                out.push((first, index, self.rows[first].tag.is_some()));
                first = index;
            }
        }
        if first < self.rows.len() {
            out.push((first, self.rows.len(), self.rows[first].tag.is_some()));
        }
        out
    }

    /// (index, tag) of the first event of each tag among the simple events `first..end`.
    fn first_tags(&self, first: usize, end: usize) -> Vec<(usize, &str)> {
        let mut seen = vec![false; self.tags.len()];
        let mut out = Vec::new();
        for (index, row) in self.rows[first..end].iter().enumerate() {
            let tag = row.tag.expect("a simple event");
            if !seen[tag] {
                seen[tag] = true;
                out.push((first + index, self.tags[tag].as_str()));
            }
        }
        out
    }

    /// (tag, steps, wall times, values) of the simple events `first..end`, one per tag in
    /// the order tags first appear.
    fn columns<'py>(
        &self,
        py: Python<'py>,
        first: usize,
        end: usize,
    ) -> PyResult<Vec<Bound<'py, PyTuple>>> {
        let mut group = vec![usize::MAX; self.tags.len()];
        let mut groups: Vec<Columns> = Vec::new();
        for row in &self.rows[first..end] {
            let tag = row.tag.expect("a simple event");
            if group[tag] == usize::MAX {
                group[tag] = groups.len();
                groups.push(Columns {
                    tag,
                    steps: Vec::new(),
                    wall_times: Vec::new(),
                    values: Vec::new(),
                });
            }
            let columns = &mut groups[group[tag]];
            columns.steps.push(row.step);
            columns.wall_times.push(row.wall_time);
            columns.values.push(row.value);
        }
        groups
            .into_iter()
            .map(|c| {
                (
                    self.tags[c.tag].as_str(),
                    PyList::new(py, c.steps)?,
                    PyList::new(py, c.wall_times)?,
                    PyList::new(py, c.values)?,
                )
                    .into_pyobject(py)
            })
            .collect()
    }
}

/// Frame `buffer` (at file offset `base`), up to `limit` good records, and read its simple
/// events; `accept(tag)` says whether a tag is a name (asked once per tag).
#[pyfunction]
#[pyo3(signature = (buffer, base, limit, accept))]
fn frames(
    buffer: Bound<'_, PyBytes>,
    base: u64,
    limit: Option<usize>,
    accept: Bound<'_, PyAny>,
) -> PyResult<Frames> {
    let bytes = buffer.as_bytes();
    let scan = framing::scan(bytes, limit);
    let mut heads: HashMap<&[u8], Option<usize>> = HashMap::new();
    let mut tags = Vec::new();
    let mut rows = Vec::with_capacity(scan.records.len());
    for record in &scan.records {
        let data = &bytes[record.start..record.start + record.length];
        let mut row = Row {
            tag: None,
            step: 0,
            wall_time: 0.0,
            value: 0.0,
        };
        if let Some(event) = simple::simple(data) {
            let tag = match heads.get(event.head) {
                Some(known) => *known,
                None => {
                    let named = match simple::head_tag(event.head) {
                        Some(tag) if accept.call1((tag,))?.is_truthy()? => {
                            tags.push(tag.to_owned());
                            Some(tags.len() - 1)
                        }
                        _ => None,
                    };
                    heads.insert(event.head, named);
                    named
                }
            };
            if tag.is_some() {
                row = Row {
                    tag,
                    step: event.step,
                    wall_time: event.wall_time,
                    value: f64::from(event.value),
                };
            }
        }
        rows.push(row);
    }
    let damaged = scan
        .damage
        .iter()
        .map(|d| (base + d.pos as u64, d.skipped.map_or(-1, |s| s as i64)))
        .collect();
    Ok(Frames {
        buffer: buffer.clone().unbind(),
        base,
        records: scan.records,
        rows,
        damaged,
        tags,
        consumed: scan.consumed,
        wanted: scan.wanted,
    })
}

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Frames>()?;
    module.add_function(wrap_pyfunction!(frames, module)?)?;
    Ok(())
}
