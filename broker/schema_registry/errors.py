"""Confluent Schema Registry's errors: an HTTP status, an ``error_code`` and a message, with
Confluent's exact texts (7.0 wording; clients match on the codes, people read the texts).
One exception type; ``api.py`` renders it as ``{"error_code": .., "message": ..}``."""

from __future__ import annotations


class RegistryError(Exception):
    """An answer other than success: ``status`` is the HTTP status, ``error_code`` Confluent's."""

    def __init__(self, status: int, error_code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code
        self.message = message

    def body(self) -> dict[str, object]:
        return {"error_code": self.error_code, "message": self.message}


class UncertainWrite(RegistryError):
    """A write that failed after its batch reached the log (no commit in time, a storage
    failure mid-write): it may yet be applied. Answered as the ``RegistryError`` it is
    (50001, 50002); the writer must read the log up to its end again before planning
    another write, or it could plan against a state that lacks this one."""

    @classmethod
    def of(cls, error: RegistryError) -> UncertainWrite:
        return cls(error.status, error.error_code, error.message)


class NotLeader(Exception):
    """This broker's registry may not write now; ``url`` is the leader's registry (None:
    no leader known). ``api.py`` forwards the request there or answers 50004."""

    def __init__(self, url: str | None) -> None:
        super().__init__(url or "no registry leader known")
        self.url = url


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(version: int) -> RegistryError:
    return RegistryError(404, 40402, f"Version {version} not found.")


def schema_not_found(schema_id: int | None = None) -> RegistryError:
    text = "Schema not found" if schema_id is None else f"Schema {schema_id} not found"
    return RegistryError(404, 40403, text)


def subject_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(
        404, 40404, f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently"
    )


def subject_not_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(
        404, 40405, f"Subject '{subject}' was not deleted first before being permanently deleted"
    )


def version_soft_deleted(subject: str, version: int | str) -> RegistryError:
    return RegistryError(
        404,
        40406,
        f"Subject '{subject}' Version {version} was soft deleted.Set permanent=true to delete"
        " permanently",
    )


def version_not_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(
        404,
        40407,
        f"Subject '{subject}' Version {version} was not deleted first before being permanently"
        " deleted",
    )


def subject_level_compatibility_not_configured(subject: str) -> RegistryError:
    return RegistryError(
        404, 40408, f"Subject '{subject}' does not have subject-level compatibility configured"
    )


def subject_level_mode_not_configured(subject: str) -> RegistryError:
    return RegistryError(
        404, 40409, f"Subject '{subject}' does not have subject-level mode configured"
    )


def incompatible_schema(subject: str) -> RegistryError:
    return RegistryError(
        409,
        409,
        f'Schema being registered is incompatible with an earlier schema for subject "{subject}"',
    )


def invalid_schema(message: str) -> RegistryError:
    return RegistryError(422, 42201, message)


def invalid_version(version: str) -> RegistryError:
    return RegistryError(
        422,
        42202,
        f"The specified version '{version}' is not a valid version id. Allowed values are between"
        ' [1, 2^31-1] and the string "latest"',
    )


def invalid_compatibility_level() -> RegistryError:
    return RegistryError(
        422,
        42203,
        "Invalid compatibility level. Valid values are none, backward, forward, full,"
        " backward_transitive, forward_transitive, and full_transitive",
    )


def invalid_mode() -> RegistryError:
    return RegistryError(
        422, 42204, "Invalid mode. Valid values are READWRITE, READONLY, and IMPORT."
    )


def operation_not_permitted(message: str) -> RegistryError:
    """42205, free text: ``Subject <s> is in read-only mode``, ``Mode changes are not allowed``."""
    return RegistryError(422, 42205, message)


def reference_exists(subject: str, version: int) -> RegistryError:
    return RegistryError(
        422,
        42206,
        "One or more references exist to the schema"
        f" {{magic=1,keytype=SCHEMA,subject={subject},version={version}}}.",
    )


def invalid_subject(subject: str) -> RegistryError:
    return RegistryError(422, 42208, f"The specified subject '{subject}' is not a valid.")


def schema_too_large() -> RegistryError:
    return RegistryError(422, 42209, "Register operation failed because schema is too large")


def store_error(message: str) -> RegistryError:
    return RegistryError(500, 50001, message)


def operation_timeout(message: str = "Register operation timed out") -> RegistryError:
    return RegistryError(500, 50002, message)


def forwarding_error(
    message: str = "Error while forwarding register schema request to the leader",
) -> RegistryError:
    return RegistryError(500, 50003, message)


def leader_not_known(message: str = "Leader not known.") -> RegistryError:
    return RegistryError(500, 50004, message)
