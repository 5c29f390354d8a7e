"""The client families in the matrix, in report order."""

from __future__ import annotations

from compat_lib.fam_aiokafka import AiokafkaFamily
from compat_lib.fam_confluent import ConfluentFamily
from compat_lib.fam_java import Java43Family, JavaFamily
from compat_lib.fam_kafka_python import KafkaPythonFamily
from compat_lib.fam_kcat import KcatFamily
from compat_lib.family import Family

FAMILIES: tuple[type[Family], ...] = (
    KafkaPythonFamily,
    AiokafkaFamily,
    ConfluentFamily,
    KcatFamily,
    JavaFamily,
    Java43Family,
)
BY_NAME: dict[str, type[Family]] = {cls.name: cls for cls in FAMILIES}
