"""Event-time windows for streamparse bolts (the Dataflow model, Storm's words).

Runs inside a bolt task. The local engine runs it tuple at a time (Storm
semantics): the watermark moves after each tuple or tick. The Spark engine
runs it a batch at a time (``WindowedBolt.start_batch``): the driver computes
each batch's watermark from what the batches before it saw
(``engines/spark/driver/windows.py``) and records it with the batch; the task
applies it before the batch's tuples (``engines/spark/task/windowing.py``);
the final batch (end of input) fires every window. Words:

- *event time*: when a tuple happened (``event_ms``, from a timestamp field
  or extractor), as opposed to *processing time*, when a task handles it
  (here: the task's tick clock, never the wall clock).
- *watermark* ``W``: the bolt's claim that no element with ``event_ms < W``
  will come any more: per input partition, max event time minus ``lag_ms``;
  the minimum over partitions (idle ones excluded); never decreasing;
  ``END_OF_TIME_MS`` at end of input (``watermark.py``).
- *window*: half-open ``[start_ms, end_ms)`` of event time (tumbling,
  sliding, session, calendar day) or the last N tuples (count); per key.
  Complete once ``W >= end_ms``; *expired* once ``W >= end_ms +
  allowed_lateness_ms`` (its state is then deleted).
- *late*: an element for a complete window; within the allowed lateness it
  updates the window (a LATE pane), beyond it is dropped -- or emitted on the
  late-tuple stream -- and counted either way.
- *pane*: one firing of a window: EARLY, ON_TIME or LATE, numbered from 0.
- *trigger*: when panes fire (the watermark; early / late every N elements or
  every T ms of processing time).
- *accumulation*: what a later pane holds: discarding (only what is new),
  accumulating (everything), accumulating-and-retracting (everything, after a
  *retraction*: the earlier pane's emits again on ``<stream>_retract``).

Call order (``WindowedBolt``): per tuple ``Windower.add`` then, unless a
watermark interval is set, ``WatermarkTracker.advance`` -> ``Windower.advance``;
per tick ``Windower.on_processing_time`` then the watermark step; at end of
input ``WatermarkTracker.end_of_input`` -> ``Windower.advance``. In batch mode
(Spark): per batch ``start_batch`` (``on_processing_time``, then ``advance`` to
the recorded watermark), then ``Windower.add`` per tuple, then, in the final
batch, ``end_of_input``. Every output
reaches the user as ``process(window)`` (panes), ``<stream>_retract`` emits
(retractions) or ``on_timer`` (event-time timers), in a deterministic order.
"""

from stormshift.windows.aggregation import Aggregation, Collect, Count, SumField
from stormshift.windows.assigners import CalendarDays, Sessions, Sliding, Tumbling
from stormshift.windows.bolt import WindowedBolt
from stormshift.windows.config import Windowing
from stormshift.windows.count import CountWindower, ReleaseBuffer
from stormshift.windows.panes import Accumulation, Pane, Retraction, TimerFired
from stormshift.windows.triggers import Trigger
from stormshift.windows.view import TupleWindow, WindowedTuple, retraction_stream, with_retractions
from stormshift.windows.watermark import WatermarkTracker
from stormshift.windows.window import END_OF_TIME_MS, START_OF_TIME_MS, Timing, Window
from stormshift.windows.windower import Windower

__all__ = [
    "END_OF_TIME_MS",
    "START_OF_TIME_MS",
    "Accumulation",
    "Aggregation",
    "CalendarDays",
    "Collect",
    "Count",
    "CountWindower",
    "Pane",
    "ReleaseBuffer",
    "Retraction",
    "Sessions",
    "Sliding",
    "SumField",
    "TimerFired",
    "Timing",
    "Trigger",
    "Tumbling",
    "TupleWindow",
    "WatermarkTracker",
    "Window",
    "WindowedBolt",
    "WindowedTuple",
    "Windower",
    "Windowing",
    "retraction_stream",
    "with_retractions",
]
