"""tf.summary.TaggedRunMetadata: the event that FileWriter.add_run_metadata writes."""
import tensorweave as tf


def test_add_run_metadata_writes_a_tagged_run_metadata_event(tmp_path):
    meta = tf.RunMetadata()
    with tf.summary.FileWriter(str(tmp_path)) as w:
        w.add_run_metadata(meta, "step_7", global_step=7)
        path = w.get_logdir()
    files = sorted(p for p in (tmp_path).iterdir() if "tfevents" in p.name)
    events = [e for e in tf.train.summary_iterator(str(files[0]))
              if e.HasField("tagged_run_metadata")]
    assert path == str(tmp_path) and len(events) == 1
    tagged = events[0].tagged_run_metadata
    assert isinstance(tagged, tf.summary.TaggedRunMetadata)
    assert (tagged.tag, events[0].step) == ("step_7", 7)
    assert tf.RunMetadata.FromString(tagged.run_metadata) == meta
