"""Which tasks wait in the broker's queue, by identity: what a sweep asks before queuing work again.

A sweep re-queues work whose task was lost: a worker killed while it held the message (Redis
keeps it in its *unacked* set until the visibility timeout, an hour), Redis restarted without
its data, or the broker down when the task was sent. Counting the queue cannot tell a lost task
from one still waiting behind a backlog -- and beat's own tasks are in that count, so one lost
delivery could be outnumbered sweep after sweep (issue 25: 553 s). Identity can: a task a
sweep may send again carries an id naming its work (``task_id("webhook-delivery", 42)``), and
``waiting(app, "webhook-delivery")`` reads which of those still wait in the queue. Anything
else is re-queued at once -- also what a worker took and has not finished: a worker alive
finishes it soon and the copy finds it done (every task behind a sweep is idempotent), a
worker killed never will.

Reading the queue: kombu's Redis transport keeps a queue as one list per priority step; a
small Lua script reads each list in slices and returns only the matching ids, so a backlog of
thousands is read without shipping the messages or blocking Redis for long.
"""
import logging
import uuid

from kombu.exceptions import OperationalError as BrokerError

logger = logging.getLogger(__name__)

#: Messages read per call of the script: Redis runs a script alone, so each slice stays short.
SLICE = 2000

WAITING_IDS = """
local found = {}
for _, raw in ipairs(redis.call('LRANGE', KEYS[1], ARGV[1], ARGV[2])) do
  local ok, message = pcall(cjson.decode, raw)
  if ok and type(message) == 'table' and type(message.headers) == 'table' then
    local id = message.headers.id
    if type(id) == 'string' and string.sub(id, 1, string.len(ARGV[3])) == ARGV[3] then
      table.insert(found, id)
    end
  end
end
return found
"""


def task_id(kind: str, key) -> str:
    """A unique task id that names its work: ``kind:key:random`` (the random part keeps ids unique,
    as Celery's bookkeeping of running tasks expects)."""
    return f"{kind}:{key}:{uuid.uuid4().hex}"


def queue_or_leave_to_sweep(task, *args, task_id: str | None = None) -> bool:
    """Queue ``task``; with the broker away, log it and return False: the caller's work is a row a sweep
    finds again, so a write that has committed must not fail (a 500 to an editor) for its fast path."""
    try:
        task.apply_async(args, task_id=task_id)
    except (BrokerError, OSError):
        logger.warning("Could not queue %s%r; the sweep will.", task.name, args, exc_info=True)
        return False
    return True


def waiting(app, kind: str) -> set[str] | None:
    """The keys of ``kind`` whose task waits in the default queue; None when the broker cannot say.

    Inline (no broker), nothing ever waits. A broker that is not Redis, or one that is down,
    cannot say: the caller then queues everything it found overdue (duplicates are harmless,
    a lost task is not).
    """
    if app.conf.task_always_eager:
        return set()
    prefix = f"{kind}:"
    try:
        with app.connection_for_read() as connection:
            connection.ensure_connection(max_retries=1)
            channel = connection.default_channel
            names = [channel._q_for_pri(app.conf.task_default_queue, step) for step in channel.priority_steps]
            ids = [found for name in dict.fromkeys(names) for found in _ids_in(channel.client, name, prefix)]
    except Exception:  # kombu's OperationalError, redis errors, a transport without priority lists
        logger.warning("Could not read which %s tasks wait in the queue.", kind, exc_info=True)
        return None
    return {found[len(prefix):].rsplit(":", 1)[0] for found in ids}


def _ids_in(client, name: str, prefix: str) -> list[str]:
    script = client.register_script(WAITING_IDS)
    found: list[str] = []
    for start in range(0, client.llen(name), SLICE):
        found += [value.decode() if isinstance(value, bytes) else value
                  for value in script(keys=[name], args=[start, start + SLICE - 1, prefix])]
    return found
