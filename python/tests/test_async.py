"""The asyncio client runs the same operations without blocking the event loop."""
import asyncio
import os

import numpy as np

import kvcache


def test_async_operations(server, unique_keys):
    keys = unique_keys(6)
    blocks = [os.urandom(500_000 + i) for i in range(6)]

    async def main() -> None:
        async with kvcache.AsyncClient(server.address) as kv:
            ticks = 0

            async def ticker() -> None:
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.001)
                    ticks += 1
            t = asyncio.create_task(ticker())
            assert await kv.put_many(zip(keys[:4], blocks[:4])) == [kvcache.PutStatus.STORED] * 4
            assert await kv.put(keys[4], blocks[4]) is kvcache.PutStatus.STORED
            out = np.empty(600_000, np.uint8)
            assert await kv.get_into(keys[0], out) == len(blocks[0])
            assert out[:len(blocks[0])].tobytes() == blocks[0]
            assert await kv.get(keys[1]) == blocks[1]
            assert await kv.head(keys[2]) == len(blocks[2])
            assert await kv.lookup_prefix(keys) == 5
            bufs = [bytearray(600_000) for _ in keys]
            got = await kv.get_many_into(keys, bufs)
            assert got == [len(b) for b in blocks[:5]] + [None]
            async with kv.pin_prefix(keys, ms=5000) as pin:
                assert pin.present == 5 and pin.lengths == [len(b) for b in blocks[:5]]
                assert await kv.delete(keys[3]) is True
                assert await pin.read_into(bufs[:5]) == got[:5]
                assert bufs[3][:len(blocks[3])] == blocks[3]
                assert await pin.get_into(0, bufs[0]) == len(blocks[0])
            assert await kv.get(keys[3]) is None
            t.cancel()
            assert ticks > 0, "the event loop ran while the operations waited"
    asyncio.run(main())
