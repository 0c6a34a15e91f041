"""Reading a run's Prometheus endpoint: every sample parsed, and a metric summed per
component (tests/test_metrics.py, tests/test_metrics_spark.py).
"""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the endpoint, parsed by prometheus_client's text parser."""
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples



def per_component(samples: dict, name: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for (sample, labels), value in samples.items():
        if sample == name:
            component = dict(labels)["component"]
            out[component] = out.get(component, 0) + value
    return out
