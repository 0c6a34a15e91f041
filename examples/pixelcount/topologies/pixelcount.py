"""Pixel counts: streamparse's kafka-jvm example, with storm-kafka-client's spout.

Unchanged Storm code: the Kafka spout is the JVM's ``KafkaSpout``, declared as a
``JavaSpout`` (bootstrap servers and topic as ``KafkaSpoutConfig.builder``'s
arguments, the consumer group and first-poll strategy in its config). On
stormshift, ``config.json``'s ``stormshift.replacements`` swaps it for
``stormshift.spouts.KafkaSpout``, which reads those values from this declaration.
"""

from streamparse import Grouping, JavaSpout, Topology

from bolts.pixels import PixelCounterBolt, PixelDeserializerBolt


class PixelCount(Topology):
    pixel_spout = JavaSpout.spec(
        name="pixel-spout",
        full_class_name="org.apache.storm.kafka.spout.KafkaSpout",
        args_list=["kafka1.prod:9092,kafka2.prod:9092", "pixels"],
        outputs=["pixel"],
        par=2,
        config={"group.id": "pixelcount", "first.poll.offset.strategy": "UNCOMMITTED_EARLIEST"},
    )
    pixel_deserializer = PixelDeserializerBolt.spec(
        name="pixel-deserializer-bolt", inputs=[pixel_spout], par=2
    )
    pixel_counter = PixelCounterBolt.spec(
        name="pixel-count-bolt", inputs={pixel_deserializer: Grouping.fields("url")}, par=2
    )
