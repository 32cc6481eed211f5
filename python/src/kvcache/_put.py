"""Puts: :class:`PutStatus`, and :func:`put`, which sends a block and tells what became of it."""
from __future__ import annotations

import enum
import logging
from typing import Optional

import crc32c as _crc32c

from ._checksum import HEADER, checksum_header
from ._engine_block import EngineBlock
from ._http1 import Response
from ._session import Session
from ._transport import ConnectionFailed, ServerLink

log = logging.getLogger("kvcache")


class PutStatus(enum.Enum):
    """What became of a put: the statuses of the Java client's ``dev.kvcache.PutStatus``, one
    for one, from the same answers. Only :attr:`STORED` means a get can find the block.

    =================  ===========================  ==========================================
    status             Java                         answer
    =================  ===========================  ==========================================
    ``STORED``         ``STORED``                   ``201``
    ``NOT_ADMITTED``   ``NOT_ADMITTED``             ``202``, or none: the server is down
    ``TOO_LARGE``      ``REJECTED_TOO_LARGE``       ``413``
    ``NO_SPACE``       ``REJECTED_NO_SPACE``        ``507`` ``no-space``
    ``NOT_DURABLE``    ``REJECTED_NOT_DURABLE``     ``507`` ``not-durable``
    =================  ===========================  ==========================================

    ``NOT_STORED``, the name a put to a server that is down had before, is :attr:`NOT_ADMITTED`.
    """

    #: The server stored the block (``201``).
    STORED = "stored"
    #: Nothing was stored, and the server is not to blame for it: its policy declined the block
    #: (``202``), or the server is down, failed during the put, or is left alone for a back-off
    #: after a failure (no answer). A get will miss.
    NOT_ADMITTED = "not-admitted"
    #: The block is larger than the server's largest (``413``); nothing changed.
    TOO_LARGE = "too-large"
    #: The server could make no room for the block (``507 no-space``): its memory is held by
    #: reads under way (retry later), or, writing through to disk, its disk tier could not take
    #: the block. Nothing was stored.
    NO_SPACE = "no-space"
    #: The server could not keep the block as durably as its mode promises (``507
    #: not-durable``): writing behind, its writes to disk fail and as many blocks as it may hold
    #: in RAM alone are already held so. Nothing was stored, and the key's older block is gone.
    NOT_DURABLE = "not-durable"
    #: The former name of :attr:`NOT_ADMITTED` for a put to a server that is down.
    NOT_STORED = "not-admitted"


#: The statuses of the answers with no error body.
_ANSWERS = {201: PutStatus.STORED, 202: PutStatus.NOT_ADMITTED, 413: PutStatus.TOO_LARGE}


def put(session: Session, link: ServerLink, hexkey: str, view: memoryview,
        engine_block: Optional[EngineBlock] = None) -> PutStatus:
    """Sends ``view`` as the block of ``hexkey`` to its server ``link``, once, with the headers of
    ``engine_block`` if given: a server that is down, or fails during the put, is
    :attr:`PutStatus.NOT_ADMITTED` (and left alone).

    Raises:
        ServerError: the server refused the request (any error answer but ``507``).
    """
    if not link.available():
        return PutStatus.NOT_ADMITTED
    headers = {"Content-Type": "application/octet-stream", "Content-Length": str(len(view))}
    if session.checksums:
        headers[HEADER] = checksum_header(_crc32c.crc32c(view))
    if engine_block is not None:
        headers.update(engine_block.headers())
    try:
        return link.exchange("PUT", f"{session.prefix}/blocks/{hexkey}",
                             lambda r: _status(r, link), view, headers)
    except ConnectionFailed as e:
        link.failed(e)
        return PutStatus.NOT_ADMITTED


def _status(r: Response, link: ServerLink) -> PutStatus:
    """The status a put's answer means, its body read; raises for a refusal."""
    answered = _ANSWERS.get(r.status)
    if answered is not None:
        r.read()
        return answered
    error = link.error(r)
    if r.status != 507:
        raise error
    log.warning("kvcache: %s", error)
    return PutStatus.NOT_DURABLE if error.code == "not-durable" else PutStatus.NO_SPACE
