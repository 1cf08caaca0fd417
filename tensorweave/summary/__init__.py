"""`tf.summary`: summary ops and event-file writers for TensorBoard.

Example:
    >>> tf.summary.scalar("loss", loss)
    >>> merged = tf.summary.merge_all()
    >>> writer = tf.summary.FileWriter("/tmp/logs", sess.graph)
    >>> writer.add_summary(sess.run(merged), step)
"""

from tensorweave.summary.summary import Event as Event
from tensorweave.summary.summary import SessionLog as SessionLog
from tensorweave.summary.summary import Summary as Summary
from tensorweave.summary.summary import SummaryMetadata as SummaryMetadata
from tensorweave.summary.summary import TaggedRunMetadata as TaggedRunMetadata
from tensorweave.summary.summary import audio as audio
from tensorweave.summary.summary import histogram as histogram
from tensorweave.summary.summary import image as image
from tensorweave.summary.summary import merge as merge
from tensorweave.summary.summary import merge_all as merge_all
from tensorweave.summary.summary import scalar as scalar
from tensorweave.summary.summary import tensor_summary as tensor_summary
from tensorweave.summary.summary import text as text
from tensorweave.summary.writer import FileWriter as FileWriter
from tensorweave.summary.writer import FileWriterCache as FileWriterCache
from tensorweave.summary.writer import summary_iterator as summary_iterator

__all__ = [
    "Event",
    "FileWriter",
    "FileWriterCache",
    "SessionLog",
    "Summary",
    "SummaryMetadata",
    "TaggedRunMetadata",
    "audio",
    "histogram",
    "image",
    "merge",
    "merge_all",
    "scalar",
    "summary_iterator",
    "tensor_summary",
    "text",
]
