"""Fast ids are valid, distinct version-4 UUIDs, and differ across forked processes."""

from __future__ import annotations

import os
import uuid

from shared.ids import fast_uuid4, fast_uuid4_hex


def test_fast_ids_are_version_4_rfc_4122_uuids_and_distinct() -> None:
    hexes = [fast_uuid4_hex() for _ in range(5000)]
    objs = [fast_uuid4() for _ in range(5000)]
    parsed = [uuid.UUID(h) for h in hexes] + objs
    assert all(u.version == 4 and u.variant == uuid.RFC_4122 for u in parsed)
    assert all(len(h) == 32 and h == uuid.UUID(h).hex for h in hexes)
    assert len({u.int for u in parsed}) == len(parsed)


def test_a_forked_child_does_not_repeat_its_parents_sequence() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its next ids and leave at once
        os.write(write, "".join(fast_uuid4_hex() for _ in range(4)).encode())
        os._exit(0)
    os.close(write)
    mine = "".join(fast_uuid4_hex() for _ in range(4))
    os.waitpid(pid, 0)
    theirs = os.read(read, 256).decode()
    os.close(read)
    assert len(theirs) == 128 and theirs != mine
