"""Codecs against each other and against kafka-python's own codec functions."""

from __future__ import annotations

import gzip
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkette.wire.compression import (
    XERIAL_MAGIC,
    CompressionError,
    CompressionType,
    DecompressedTooLargeError,
    UnsupportedCompressionTypeError,
    compress,
    decompress,
    decompressed_view,
    snappy_decompress,
    xerial_snappy_compress,
)

# kafka-python loads its protocol JSON with a deprecated importlib.resources call.
pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated. Use files:DeprecationWarning")

ALL_CODECS = [c.value for c in CompressionType]
COMPRESSED_CODECS = [c.value for c in CompressionType if c is not CompressionType.NONE]
SAMPLE = b"".join(b"kafkette record %d, some text that repeats; " % i for i in range(3000))


def kafka_codec():
    """kafka-python's codec module, skipping when its optional codec libraries are absent."""
    from kafka import codec

    missing = [
        name
        for name, present in (
            ("python-snappy", codec.has_snappy()),
            ("lz4", codec.has_lz4()),
            ("zstandard", codec.has_zstd()),
        )
        if not present
    ]
    if missing:
        pytest.skip(f"kafka-python codec libraries not installed: {', '.join(missing)}")
    return codec


@settings(max_examples=60, deadline=None)
@given(codec=st.sampled_from(ALL_CODECS), data=st.binary(max_size=5000))
def test_round_trip_every_codec(codec: int, data: bytes) -> None:
    assert decompress(codec, compress(codec, data)) == data


@pytest.mark.parametrize("codec", COMPRESSED_CODECS)
def test_compressible_data_shrinks(codec: int) -> None:
    packed = compress(codec, SAMPLE)
    assert len(packed) < len(SAMPLE) // 4
    assert decompress(codec, packed) == SAMPLE


@pytest.mark.parametrize("codec", COMPRESSED_CODECS)
def test_accepts_bytearray_and_memoryview(codec: int) -> None:
    packed = compress(codec, bytearray(SAMPLE))
    assert decompress(codec, memoryview(bytearray(packed))) == SAMPLE
    assert isinstance(packed, bytes)
    assert decompress(codec, compress(codec, memoryview(SAMPLE)[10:])) == SAMPLE[10:]


@pytest.mark.parametrize("codec", [-1, 5, 6, 7, 99])
def test_unknown_codec_is_refused(codec: int) -> None:
    with pytest.raises(UnsupportedCompressionTypeError, match=str(codec)) as compress_error:
        compress(codec, b"abc")
    assert compress_error.value.codec == codec
    with pytest.raises(UnsupportedCompressionTypeError):
        decompress(codec, b"abc")


@pytest.mark.parametrize("codec", COMPRESSED_CODECS)
def test_garbage_raises_compression_error(codec: int) -> None:
    with pytest.raises(CompressionError):
        decompress(codec, b"\xff" * 7 + b"definitely not compressed data" * 3)


def hand_built_xerial(chunks: list[bytes], version_format: str = ">ii") -> bytes:
    """A xerial stream from its spec: magic, version and compat ints, (int32 len, block)*."""
    import cramjam

    out = bytearray(b"\x82SNAPPY\x00")
    out += struct.pack(version_format, 1, 1)
    for chunk in chunks:
        block = bytes(cramjam.snappy.compress_raw(chunk))
        out += struct.pack(">i", len(block))
        out += block
    return bytes(out)


def test_xerial_framed_snappy_decompresses() -> None:
    chunks = [SAMPLE[:32768], SAMPLE[32768:65536], SAMPLE[65536:]]
    stream = hand_built_xerial(chunks)
    assert stream.startswith(XERIAL_MAGIC)
    assert snappy_decompress(stream) == SAMPLE
    assert decompress(CompressionType.SNAPPY, stream) == SAMPLE


def test_xerial_with_little_endian_version_ints_decompresses() -> None:
    # Some writers put the version/compat ints in the wrong byte order.
    assert snappy_decompress(hand_built_xerial([b"abc" * 50], "<ii")) == b"abc" * 50


def test_xerial_empty_stream_is_empty() -> None:
    assert snappy_decompress(hand_built_xerial([])) == b""


def test_raw_snappy_decompresses() -> None:
    import cramjam

    raw = bytes(cramjam.snappy.compress_raw(SAMPLE))
    assert not raw.startswith(XERIAL_MAGIC)
    assert decompress(CompressionType.SNAPPY, raw) == SAMPLE


def test_we_write_raw_snappy() -> None:
    import cramjam

    packed = compress(CompressionType.SNAPPY, SAMPLE)
    assert not packed.startswith(XERIAL_MAGIC)
    assert bytes(cramjam.snappy.decompress_raw(packed)) == SAMPLE


def test_our_xerial_writer_matches_the_spec() -> None:
    stream = xerial_snappy_compress(SAMPLE, block_size=10000)
    assert stream[:8] == XERIAL_MAGIC
    assert struct.unpack(">ii", stream[8:16]) == (1, 1)
    assert snappy_decompress(stream) == SAMPLE


@pytest.mark.parametrize(
    "stream",
    [
        XERIAL_MAGIC + b"\x00\x00",  # header cut short
        hand_built_xerial([b"abc" * 100])[:-3],  # last block cut short
        hand_built_xerial([b"abc"]) + b"\x00\x00",  # dangling partial length
    ],
)
def test_broken_xerial_raises(stream: bytes) -> None:
    with pytest.raises(CompressionError):
        snappy_decompress(stream)


def test_lz4_frame_has_independent_blocks() -> None:
    # The Java client refuses LZ4 frames whose blocks depend on each other.
    packed = compress(CompressionType.LZ4, SAMPLE)
    assert packed[:4] == b"\x04\x22\x4d\x18"  # LZ4 frame magic, little-endian 0x184D2204
    flags = packed[4]
    assert flags >> 6 == 0b01  # frame version
    assert flags & 0x20, "block independence flag must be set"


def test_gzip_concatenated_members() -> None:
    stream = gzip.compress(SAMPLE[:1000]) + gzip.compress(SAMPLE[1000:])
    assert decompress(CompressionType.GZIP, stream) == SAMPLE


def test_zstd_streamed_frames_without_content_size() -> None:
    zstandard = pytest.importorskip("zstandard", reason="zstandard not installed")
    compressor = zstandard.ZstdCompressor(write_content_size=False)
    stream = compressor.compress(SAMPLE[:1000]) + compressor.compress(SAMPLE[1000:])
    assert decompress(CompressionType.ZSTD, stream) == SAMPLE


@pytest.mark.parametrize("codec", COMPRESSED_CODECS)
def test_kafka_python_output_decompresses(codec: int) -> None:
    kc = kafka_codec()
    encoders = {
        1: kc.gzip_encode,
        2: kc.snappy_encode,  # xerial framing, like the Java client
        3: kc.lz4_encode,
        4: kc.zstd_encode,
    }
    assert decompress(codec, encoders[codec](SAMPLE)) == SAMPLE


def test_kafka_python_raw_snappy_decompresses() -> None:
    kc = kafka_codec()
    assert decompress(CompressionType.SNAPPY, kc.snappy_encode(SAMPLE, False)) == SAMPLE


@pytest.mark.parametrize("codec", COMPRESSED_CODECS)
def test_kafka_python_reads_our_output(codec: int) -> None:
    kc = kafka_codec()
    decoders = {
        1: kc.gzip_decode,
        2: kc.snappy_decode,
        3: kc.lz4_decode,
        4: kc.zstd_decode,
    }
    assert decoders[codec](compress(codec, SAMPLE)) == SAMPLE
    assert kc.snappy_decode(xerial_snappy_compress(SAMPLE)) == SAMPLE


# --- decompressed_view: what produce validation reads -----------------------------------


def _streams() -> list[tuple[str, int, bytes]]:
    zstandard = pytest.importorskip("zstandard", reason="zstandard not installed")
    frames = zstandard.ZstdCompressor(write_content_size=False)
    return [
        *[(CompressionType(c).name, c, compress(c, SAMPLE)) for c in COMPRESSED_CODECS],
        ("gzip members", 1, gzip.compress(SAMPLE[:1000]) + gzip.compress(SAMPLE[1000:])),
        ("zstd frames", 4, frames.compress(SAMPLE[:1000]) + frames.compress(SAMPLE[1000:])),
        ("xerial snappy", 2, xerial_snappy_compress(SAMPLE, block_size=700)),
    ]


def test_decompressed_view_matches_decompress() -> None:
    for name, codec, stream in _streams():
        with decompressed_view(codec, stream, 1 << 20) as view:
            assert bytes(view) == SAMPLE, name
        with decompressed_view(codec, stream, len(SAMPLE)) as view:  # exactly the limit
            assert len(view) == len(SAMPLE), name


@pytest.mark.parametrize("codec", COMPRESSED_CODECS)
def test_decompressed_view_grows_its_buffer_up_to_the_limit(codec: int) -> None:
    big = SAMPLE * (3 * (1 << 20) // len(SAMPLE))  # larger than the first 1 MiB buffer
    with decompressed_view(codec, compress(codec, big), 64 << 20) as view:
        assert bytes(view) == big
    with decompressed_view(codec, compress(codec, SAMPLE), 1 << 20) as view:  # and again
        assert bytes(view) == SAMPLE


@pytest.mark.parametrize("codec", COMPRESSED_CODECS)
def test_decompression_bomb_stops_at_the_limit(codec: int) -> None:
    bomb = compress(codec, bytes(8 << 20))
    with pytest.raises(DecompressedTooLargeError):
        with decompressed_view(codec, bomb, 1 << 20):
            pass
    with pytest.raises(DecompressedTooLargeError):
        with decompressed_view(codec, compress(codec, SAMPLE), len(SAMPLE) - 1):
            pass


@pytest.mark.parametrize("codec", COMPRESSED_CODECS)
def test_decompressed_view_refuses_garbage(codec: int) -> None:
    with pytest.raises(CompressionError) as excinfo:
        with decompressed_view(codec, bytes(range(7, 200)), 1 << 20):
            pass
    assert not isinstance(excinfo.value, DecompressedTooLargeError)
