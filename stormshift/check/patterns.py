"""What a call *is*: dotted names for expressions, and the tables of hazards.

``Scope.qualify`` turns an expression into the dotted path it comes from,
following imports (module-level and local), local variables and the
component's instance attributes: with ``self.r = redis.Redis()`` in
``initialize``, ``self.r.incr(k)`` in ``process`` is ``redis.Redis().incr``.
``()`` marks "the result of calling", so a method of a client object is told
apart from a module function. The ``classify_*`` functions map such a path
(and the call's arguments) to a rule id, or None. Pure: no imports of the
user's code beyond what the loader already imported.
"""

from __future__ import annotations

import ast
import builtins
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType

__all__ = [
    "MUTABLE_FACTORIES", "MUTATING_METHODS", "Scope", "classify_clock", "classify_random",
    "classify_redis_signature", "classify_thread", "classify_write", "import_aliases",
]

EXTERNAL_ROOTS = frozenset({
    "redis", "rediscluster", "requests", "httpx", "urllib3", "urllib", "http", "aiohttp",
    "psycopg2", "psycopg", "pymysql", "MySQLdb", "mysql", "sqlite3", "sqlalchemy", "cassandra",
    "pymongo", "motor", "kafka", "confluent_kafka", "boto3", "botocore", "elasticsearch",
    "pika", "happybase", "socket", "smtplib", "ftplib", "pymemcache", "memcache", "influxdb",
    "clickhouse_driver", "pyodbc", "cx_Oracle", "oracledb", "google", "azure",
})
NON_IDEMPOTENT = frozenset({
    "incr", "incrby", "incrbyfloat", "decr", "decrby", "hincrby", "hincrbyfloat", "zincrby",
    "lpush", "rpush", "lpushx", "rpushx", "linsert", "xadd", "publish", "append", "rpoplpush",
    "lpop", "rpop", "spop", "send", "send_message", "send_messages", "produce", "post",
    "insert", "insert_one", "insert_many", "bulk_write", "add", "add_all", "put_record",
    "put_records", "sendall", "sendto", "sendmail", "basic_publish", "index", "bulk",
    "execute_command", "urlopen", "request", "find_one_and_update",
})
IDEMPOTENT = frozenset({
    "set", "setex", "psetex", "setnx", "mset", "msetnx", "hset", "hmset", "hsetnx", "sadd",
    "srem", "zadd", "zrem", "delete", "hdel", "expire", "pexpire", "expireat", "put",
    "put_object", "upload_file", "upload_fileobj", "put_item", "update_item", "delete_item",
    "batch_write_item", "replace_one", "update_one", "update_many", "delete_one",
    "delete_many", "write_points", "patch", "lset", "ltrim", "setbit", "upsert", "merge",
})
FILE_OPENERS = frozenset({"open", "io.open", "codecs.open"})
SQL_CALLS = frozenset({"execute", "executemany", "executescript"})
HTTP_MODULE_WRITES = frozenset({"post", "put", "patch", "delete", "request"})
HTTP_MODULE_READS = frozenset({"get", "head", "options"})
HTTP_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
HTTP_ROOTS = frozenset({"requests", "httpx", "urllib3", "urllib", "http", "aiohttp"})
WALL_CLOCK = frozenset({
    "time.time", "time.time_ns", "time.monotonic", "time.monotonic_ns",
    "datetime.datetime.now", "datetime.datetime.utcnow", "datetime.datetime.today",
    "datetime.date.today", "pendulum.now", "arrow.now", "arrow.utcnow",
})
CLOCK_WITHOUT_ARGS = frozenset({"time.localtime", "time.gmtime", "time.ctime", "time.asctime",
                                "time.strftime"})
RANDOM_MODULES = ("random", "numpy.random")
NOT_DRAWS = frozenset({"seed", "Random", "SystemRandom", "getstate", "setstate",
                       "default_rng", "RandomState", "Generator"})
ALWAYS_RANDOM = frozenset({"uuid.uuid1", "uuid.uuid4", "os.urandom", "os.getrandom",
                           "random.SystemRandom"})
SEEDABLE = frozenset({"random.Random", "numpy.random.default_rng", "numpy.random.RandomState"})
THREADS = frozenset({"threading.Thread", "threading.Timer", "_thread.start_new_thread",
                     "_thread.start_new", "multiprocessing.Process",
                     "multiprocessing.context.Process"})
EXECUTORS = frozenset({
    "concurrent.futures.ThreadPoolExecutor", "concurrent.futures.ProcessPoolExecutor",
    "concurrent.futures.thread.ThreadPoolExecutor", "multiprocessing.Pool",
    "multiprocessing.pool.Pool", "multiprocessing.pool.ThreadPool",
    "concurrent.futures.process.ProcessPoolExecutor",
})
MUTABLE_FACTORIES = frozenset({
    "dict", "list", "set", "collections.Counter", "collections.defaultdict",
    "collections.OrderedDict", "collections.deque", "bytearray",
})
MUTATING_METHODS = frozenset({
    "append", "extend", "insert", "remove", "pop", "popitem", "clear", "update", "add",
    "discard", "setdefault", "appendleft", "extendleft", "popleft", "sort", "reverse",
    "difference_update", "intersection_update", "symmetric_difference_update", "subtract",
})


def import_aliases(body: list[ast.stmt] | ast.AST) -> dict[str, str]:
    """Name -> dotted path for every import in ``body`` (module- or function-level)."""
    out: dict[str, str] = {}
    nodes = ast.walk(body) if isinstance(body, ast.AST) else (n for s in body for n in ast.walk(s))
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    out[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    out[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


@dataclass
class Scope:
    """Names visible to one function: imports, locals, the component's attributes."""

    aliases: Mapping[str, str]
    module: ModuleType | None = None
    self_attrs: Mapping[str, str] = field(default_factory=dict)
    locals: dict[str, str] = field(default_factory=dict)

    def qualify(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                return self.self_attrs.get(node.attr)
            base = self.qualify(node.value)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, ast.Call):
            base = self.qualify(node.func)
            if base in FILE_OPENERS:  # keep the mode: writes to the file are judged by it
                base = f"{base}:{_literal(node, 1, 'mode') or 'r'}"
            return f"{base}()" if base else None
        if isinstance(node, ast.Subscript):
            return self.qualify(node.value)
        return None

    def _name(self, name: str) -> str | None:
        if name in self.locals:
            return self.locals[name]
        if name in self.aliases:
            return self.aliases[name]
        obj = vars(self.module).get(name) if self.module is not None else None
        if isinstance(obj, ModuleType):
            return obj.__name__
        if isinstance(obj, type):
            if issubclass(obj, threading.Thread):
                return "threading.Thread"
            return f"{obj.__module__}.{obj.__qualname__}"
        if obj is None and hasattr(builtins, name):
            return name
        return None

    def learn_locals(self, func: ast.AST) -> None:
        """Origins of a function's local names, in source order."""
        binds: list[tuple[int, str, ast.AST]] = []
        for node in ast.walk(func):
            if isinstance(node, ast.Assign):
                binds += [(node.lineno, t.id, node.value) for t in node.targets
                          if isinstance(t, ast.Name)]
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                binds += [(node.lineno, i.optional_vars.id, i.context_expr) for i in node.items
                          if isinstance(i.optional_vars, ast.Name)]
            elif isinstance(node, ast.For) and isinstance(node.target, ast.Name):
                binds.append((node.lineno, node.target.id, node.iter))
        for _, name, value in sorted(binds, key=lambda b: b[0]):
            origin = self.qualify(value)
            if origin:
                self.locals[name] = origin


def _root_leaf(path: str) -> tuple[str, str, bool]:
    """``redis.Redis().incr`` -> (``redis``, ``incr``, called-on-an-object)."""
    head, _, leaf = path.rpartition(".")
    return path.split(".")[0], leaf, "()" in head


def _literal(call: ast.Call, index: int, keyword: str) -> str | None:
    arg: ast.AST | None = call.args[index] if len(call.args) > index else None
    for kw in call.keywords:
        if kw.arg == keyword:
            arg = kw.value
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    return None


def _sql_rule(call: ast.Call) -> str | None:
    text = _literal(call, 0, "operation")
    if text is None:
        return "external-write" if call.args else None
    words = text.upper().split()
    if not words or words[0] in ("SELECT", "SHOW", "DESCRIBE", "EXPLAIN", "PRAGMA"):
        return None
    upper = " ".join(words)
    if words[0] == "WITH" and not any(w in upper for w in ("INSERT", "UPDATE", "DELETE")):
        return None
    if any(w in words for w in ("INSERT", "DELETE")) or "+" in upper or "APPEND" in upper:
        return "external-write"
    return "idempotent-write"


def _file_mode_rule(mode: str | None) -> str | None:
    if not mode:
        return None
    if "a" in mode:
        return "external-write"
    return "idempotent-write" if any(c in mode for c in "wx+") else None


def classify_write(path: str, call: ast.Call) -> str | None:
    """``external-write`` / ``idempotent-write`` for a call to ``path``, ``external-read`` for
    an HTTP call that only asks (GET, HEAD, OPTIONS), else None."""
    if path in FILE_OPENERS or path.endswith("pathlib.Path().open"):
        return _file_mode_rule(_literal(call, 0 if path.startswith("pathlib") else 1, "mode"))
    opener, _, method = path.rpartition("().")
    if opener.partition(":")[0] in FILE_OPENERS and method in ("write", "writelines"):
        return _file_mode_rule(opener.partition(":")[2])
    if path.startswith("pathlib.Path") and path.endswith((".write_text", ".write_bytes")):
        return "idempotent-write"
    root, leaf, on_object = _root_leaf(path)
    if root not in EXTERNAL_ROOTS:
        return None
    if not on_object:
        if root in ("requests", "httpx") and leaf in HTTP_MODULE_WRITES:
            return "external-read" if leaf == "request" and _http_read(call) else \
                "external-write"
        if root in ("requests", "httpx") and leaf in HTTP_MODULE_READS:
            return "external-read"
        if path == "urllib.request.urlopen":
            sends = len(call.args) > 1 or any(k.arg == "data" for k in call.keywords)
            return "external-write" if sends else "external-read"
        return None
    if root in HTTP_ROOTS and leaf in ("request", "urlopen") and _http_read(call):
        return "external-read"  # urllib3 / http.client / a session: request("GET", url)
    if leaf in SQL_CALLS:
        return None if root in ("redis", "rediscluster") else _sql_rule(call)
    if leaf in NON_IDEMPOTENT:
        return "external-write"
    return "idempotent-write" if leaf in IDEMPOTENT else None


def _http_read(call: ast.Call) -> bool:
    """``request("GET", url)`` and the like: a method literal that only reads."""
    method = _literal(call, 0, "method")
    return method is not None and method.upper() in HTTP_READ_METHODS


def classify_redis_signature(path: str, call: ast.Call) -> bool:
    """A ``zincrby(name, member)`` call of redis-py 2's signature (see the rule)."""
    root, leaf, on_object = _root_leaf(path)
    return (root in ("redis", "rediscluster") and on_object and leaf == "zincrby"
            and len(call.args) == 2 and not call.keywords)


def classify_clock(path: str, call: ast.Call) -> bool:
    if path in WALL_CLOCK:
        return True
    return path in CLOCK_WITHOUT_ARGS and len(call.args) < (2 if path == "time.strftime" else 1)


def classify_random(path: str, call: ast.Call, seeded: frozenset[str]) -> str | None:
    """``"unseeded"`` for a draw nobody seeded, ``"seeded"`` for a draw from a random
    module whose ``seed()`` the code calls (``seeded``), else None."""
    if path in ALWAYS_RANDOM or path.startswith("secrets."):
        return "unseeded"
    if path in SEEDABLE:
        return "unseeded" if not call.args and not call.keywords else None
    for module in RANDOM_MODULES:
        head, _, leaf = path.rpartition(".")
        if head == module and leaf not in NOT_DRAWS and not leaf.startswith("_"):
            return "seeded" if module in seeded else "unseeded"
    return None


def classify_thread(path: str) -> str | None:
    if path in THREADS:
        return "thread"
    return "executor" if path in EXECUTORS else None
