"""What op kernels run, apart from the op stanzas that register them (`ops/`).

Numeric and resource code with no graph building, below `ops` and above `runtime`
(TF keeps the same split: `core/ops` declares, `core/kernels` computes):

- resources kept per device: `queue_resource` (FIFO/random-shuffle/priority/padding
  queues), `accumulator_resource` (conditional accumulators), `reader_resource` and
  `reader_sources` (TF1 readers: work queues, files to records);
- formats: `wire_batch`, `example_kernel`, `sequence_example_kernel` (tf.Example parsing
  on the wire format), `codec_kernels` and `png16` (image codecs);
- hashes: `fingerprint` (Fingerprint64, Hash64), `siphash` (strong hash buckets);
- shapes and indices: `window_geometry` (conv/pool windows and padding),
  `slice_specs` (Slice/StridedSlice index specs), `range_samplers` (candidate
  sampling distributions);
- `tensor_array_value`: the immutable value a TensorArray's flow carries.
"""
