"""Parsers of node command output: nvidia-smi, the kubelet checkpoint, ls -l of /dev/nvidia*.

Property tests render with the simulator's nvidia-smi and parse back, with any field unreadable,
and feed arbitrary text to every parser: none may raise anything but its own documented error.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.probes.checkpoint import CheckpointError, decode_alloc_env, parse_checkpoint
from bot.probes.devices import DevEntry, device_time_skew, parse_ls
from bot.probes.nvidia_smi import (
    APPS_QUERY,
    GPU_QUERY,
    parse_apps_query,
    parse_cuda_version,
    parse_driver_version,
    parse_gpu_query,
    parse_proc_driver_version,
)
from bot.sim.nvidia_smi import _GPU_FIELDS, render
from bot.sim.scenario import DevFile, GpuFacts, ProcessFacts
from bot.sim.ssh_server import render_ls

MARKERS = ["[N/A]", "[Not Supported]", "[Unknown Error]", "[Insufficient Permissions]"]
REFERENCE_CHECKPOINT = (
    '{"Data":{"PodDeviceEntries":[{"PodUID":"9a15d2b5-c152-46b9-96e0-d57032629e1f","ContainerName":"app",'
    '"ResourceName":"nvidia.com/gpu","DeviceIDs":{"1":["GPU-9b341c59-f96b-ba85-c137-78c3652fea65"]},'
    '"AllocResp":"Ch8KFk5WSURJQV9WSVNJQkxFX0RFVklDRVMSBXRlZ3Jh"}],'
    '"RegisteredDevices":{"nvidia.com/gpu":["GPU-9b341c59-f96b-ba85-c137-78c3652fea65"]}},'
    '"Checksum":3451722052}'
)


def args_of(command: str) -> list[str]:
    return shlex.split(command)[1:]


# -- nvidia-smi ---------------------------------------------------------------------------------


def test_reference_gpu_line() -> None:
    rows = parse_gpu_query(
        "0, GPU-aaaaaaaa-1111-2222-3333-444444444444, Tesla V100-SXM2-32GB, 0, 0, 32510, 33, 30.12\n"
    )
    assert len(rows) == 1
    row = rows[0]
    assert (row.index, row.uuid, row.name) == (
        0,
        "GPU-aaaaaaaa-1111-2222-3333-444444444444",
        "Tesla V100-SXM2-32GB",
    )
    assert (row.utilization_gpu, row.memory_used_mib, row.memory_total_mib) == (0.0, 0.0, 32510.0)
    assert (row.temperature_c, row.power_w) == (33.0, 30.12)


@pytest.mark.parametrize("marker", MARKERS + ["", "N/A"])
def test_unavailable_values_are_none_and_raw_is_kept(marker: str) -> None:
    line = f"0, GPU-a, A100, {marker}, {marker}, 40960, {marker}, {marker}"
    problems: list[str] = []
    (row,) = parse_gpu_query(line, problems=problems)
    assert row.utilization_gpu is None and row.memory_used_mib is None
    assert row.temperature_c is None and row.power_w is None
    assert row.memory_total_mib == 40960.0
    assert row.raw["power.draw"] == marker
    assert problems == []


def test_units_commas_in_names_and_bad_lines() -> None:
    problems: list[str] = []
    rows = parse_gpu_query(
        "1, GPU-b, Weird, Name, 30 %, 1300 MiB, 32768 MiB, 40, 55.10 W\nnot a row\n\n", problems=problems
    )
    assert [(r.index, r.name, r.utilization_gpu, r.memory_used_mib, r.power_w) for r in rows] == [
        (1, "Weird, Name", 30.0, 1300.0, 55.1)
    ]
    assert problems == ["unreadable nvidia-smi GPU line: not a row"]


def test_apps_query() -> None:
    text = "4242, /usr/bin/python3, 1536, GPU-a\n77, [Insufficient Permissions], [N/A], GPU-b\n"
    rows = parse_apps_query(text)
    assert [(r.pid, r.process_name, r.used_memory_mib, r.gpu_uuid) for r in rows] == [
        (4242, "/usr/bin/python3", 1536.0, "GPU-a"),
        (77, "", None, "GPU-b"),
    ]
    assert parse_apps_query("") == []


def test_versions_from_the_default_table_and_proc() -> None:
    gpus = [GpuFacts(index=0, uuid="GPU-a", name="A100")]
    table, _, rc = render([], gpus, [], "535.216.03", "12.2")
    assert rc == 0
    assert "| NVIDIA-SMI 535.216.03   Driver Version: 535.216.03   CUDA Version: 12.2" in table
    assert (parse_cuda_version(table), parse_driver_version(table)) == ("12.2", "535.216.03")
    assert parse_cuda_version("no header") is None
    proc = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri May 31 09:35:42 UTC 2024\n"
    assert parse_proc_driver_version(proc) == "550.90.07"
    assert parse_proc_driver_version("cat: no such file") is None


def test_render_errors_and_xml() -> None:
    gpus = [GpuFacts(index=0, uuid="GPU-a", name="A100", power_w=None)]
    procs = [ProcessFacts(pid=1, name="python", gpu_uuid="GPU-a", used_memory_mib=None)]
    assert render(["--query-gpu=index"], gpus, procs, "1", "1")[2] == 2  # --format is required
    assert render(["--query-gpu=index", "--format=json"], gpus, procs, "1", "1")[2] == 2
    assert render(["--bogus"], gpus, procs, "1", "1")[2] == 2
    assert render(["-L"], [], [], "1", "1") == ("No devices were found\n", "", 6)
    out, _, rc = render(["-q", "-x"], gpus, procs, "535.216.03", "12.2")
    root = ET.fromstring(out.split("\n", 2)[2])
    assert rc == 0 and root.findtext("cuda_version") == "12.2"
    assert root.findtext("gpu/gpu_power_readings/power_draw") == "N/A"
    assert root.findtext("gpu/processes/process_info/pid") == "1"
    out, _, _ = render(args_of(APPS_QUERY), gpus, procs, "1", "1")
    assert out == "1, python, [N/A], GPU-a\n"


@st.composite
def gpu_facts(draw: st.DrawFn) -> GpuFacts:
    def value(maximum: float) -> st.SearchStrategy[float | None]:
        return st.none() | st.integers(0, int(maximum)).map(float)

    numeric = ["utilization_gpu", "memory_used_mib", "memory_total_mib", "temperature_c"]
    facts = GpuFacts(
        index=draw(st.integers(0, 15)),
        uuid="GPU-" + draw(st.uuids()).hex,
        name=draw(st.sampled_from(["Tesla V100-SXM2-32GB", "NVIDIA A100-SXM4-80GB", "Odd, Name"])),
        utilization_gpu=draw(value(100)),
        memory_used_mib=draw(value(81920)),
        memory_total_mib=draw(value(81920)),
        temperature_c=draw(value(110)),
        power_w=draw(st.none() | st.integers(0, 70000).map(lambda x: x / 100)),
    )
    fields = numeric + ["power_w", "uuid", "name", "index"]
    facts.raw = draw(st.dictionaries(st.sampled_from(fields), st.sampled_from(MARKERS), max_size=4))
    return facts


@settings(max_examples=200, deadline=None)
@given(st.lists(gpu_facts(), min_size=1, max_size=4))
def test_render_then_parse_round_trip(gpus: list[GpuFacts]) -> None:
    out, err, rc = render(args_of(GPU_QUERY), gpus, [], "535.216.03", "12.2")
    assert (err, rc) == ("", 0)
    problems: list[str] = []
    rows = parse_gpu_query(out, problems=problems)
    assert problems == [] and len(rows) == len(gpus)
    for gpu, row in zip(gpus, rows, strict=True):
        for attr, field, digits in [
            ("utilization_gpu", "utilization.gpu", 0),
            ("memory_used_mib", "memory.used", 0),
            ("memory_total_mib", "memory.total", 0),
            ("temperature_c", "temperature.gpu", 0),
            ("power_w", "power.draw", 2),
        ]:
            expected = None if attr in gpu.raw else getattr(gpu, attr)
            got = getattr(row, attr)
            assert got == (None if expected is None else round(expected, digits)), attr
            if attr in gpu.raw:
                assert row.raw[field] == gpu.raw[attr]
        assert row.index == (None if "index" in gpu.raw else gpu.index)
        assert row.uuid == ("" if "uuid" in gpu.raw else gpu.uuid)
        assert row.name == ("" if "name" in gpu.raw else gpu.name)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.sampled_from(sorted(_GPU_FIELDS)), min_size=1, max_size=8),
    st.sampled_from(["csv", "csv,noheader", "csv,nounits", "csv,noheader,nounits"]),
    st.lists(gpu_facts(), min_size=1, max_size=3),
)
def test_any_field_list_renders_one_cell_per_field(fields: list[str], fmt: str, gpus: list[GpuFacts]) -> None:
    out, _, rc = render(
        [f"--query-gpu={','.join(fields)}", f"--format={fmt}"], gpus, [], "535.216.03", "12.2"
    )
    assert rc == 0
    lines = out.splitlines()
    assert len(lines) == len(gpus) + (0 if "noheader" in fmt else 1)
    if "noheader" not in fmt:
        assert lines[0].split(", ")[0].split(" [")[0] == fields[0]
    for line in lines[-len(gpus) :]:
        assert len(line.split(", ")) >= len(fields)
        if "nounits" in fmt:
            assert not any(c.endswith((" MiB", " W", " %")) for c in line.split(", "))


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_no_text_crashes_the_nvidia_smi_parsers(text: str) -> None:
    parse_gpu_query(text, problems=[])
    parse_apps_query(text)
    parse_cuda_version(text)
    parse_driver_version(text)
    parse_proc_driver_version(text)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(MARKERS + ["0", "1.5", "nan", "inf", "-1", "12 MiB", "x"]), min_size=8, max_size=8
    )
)
def test_any_cell_may_be_anything(cells: list[str]) -> None:
    (row,) = parse_gpu_query(", ".join(cells))
    for value in (row.utilization_gpu, row.memory_used_mib, row.power_w):
        assert value is None or value == value  # never NaN


# -- kubelet checkpoint -------------------------------------------------------------------------


def test_reference_checkpoint() -> None:
    cp = parse_checkpoint(REFERENCE_CHECKPOINT)
    assert cp.format == "v2" and cp.boot_id is None and cp.checksum == 3451722052
    (entry,) = cp.entries
    assert (entry.pod_uid, entry.container, entry.resource) == (
        "9a15d2b5-c152-46b9-96e0-d57032629e1f",
        "app",
        "nvidia.com/gpu",
    )
    assert entry.device_ids == ["GPU-9b341c59-f96b-ba85-c137-78c3652fea65"]
    assert entry.alloc_env == {"NVIDIA_VISIBLE_DEVICES": "tegra"}
    assert cp.registered == {"nvidia.com/gpu": ["GPU-9b341c59-f96b-ba85-c137-78c3652fea65"]}


def test_numa_duplicates_v1_lists_null_entries_and_boot_id() -> None:
    v2 = {
        "Data": {
            "PodDeviceEntries": [
                {
                    "PodUID": "u",
                    "ContainerName": "c",
                    "ResourceName": "r",
                    "DeviceIDs": {"0": ["a", "b"], "1": ["b"]},
                }
            ],
            "RegisteredDevices": {"r": ["a", "b"]},
        },
        "Checksum": 1,
        "BootID": "f1e2",
    }
    cp = parse_checkpoint(json.dumps(v2))
    assert cp.entries[0].device_ids == ["a", "b"] and cp.boot_id == "f1e2" and cp.format == "v2"
    v1 = {
        "Data": {
            "PodDeviceEntries": [
                {"PodUID": "u", "ContainerName": "c", "ResourceName": "r", "DeviceIDs": ["x", "x"]}
            ],
            "RegisteredDevices": {"r": ["x"]},
        },
        "Checksum": 2,
    }
    cp = parse_checkpoint(json.dumps(v1))
    assert cp.format == "v1" and cp.entries[0].device_ids == ["x"]
    empty = parse_checkpoint('{"Data":{"PodDeviceEntries":null,"RegisteredDevices":null},"Checksum":1}')
    assert empty.entries == [] and empty.registered == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "not a JSON object"),
        ('{"Checksum":1}', "no Data object"),
        ('{"Data":{"PodDeviceEntries":{}}}', "PodDeviceEntries"),
        ('{"Data":{"PodDeviceEntries":[{"PodUID":1}]}}', "PodUID"),
        (
            '{"Data":{"PodDeviceEntries":[{"PodUID":"u","ContainerName":"c","ResourceName":"r","DeviceIDs":5}]}}',
            "DeviceIDs",
        ),
        ('{"Data":{"RegisteredDevices":{"r":[1]}}}', "not a string"),
    ],
)
def test_malformed_checkpoint_says_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(CheckpointError, match=message):
        parse_checkpoint(text)
    assert issubclass(CheckpointError, ValueError)


@settings(max_examples=300, deadline=None)
@given(
    st.text()
    | st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=3),
    ).map(lambda v: json.dumps({"Data": v}))
)
def test_no_text_crashes_the_checkpoint_parser(text: str) -> None:
    with contextlib.suppress(CheckpointError):
        parse_checkpoint(text)


@given(st.text())
def test_alloc_env_never_raises(text: str) -> None:
    assert isinstance(decode_alloc_env(text), dict)


# -- /dev/nvidia* -------------------------------------------------------------------------------


def test_ls_lines_and_skew() -> None:
    text = (
        "crw-rw-rw- 1 root root 195,   0 2026-05-07 10:02:11.000000000 +0000 /dev/nvidia0\n"
        "crw-rw-rw- 1 root root 195, 255 2026-05-07 10:02:11.500000000 +0000 /dev/nvidiactl\n"
        "crw-rw-rw- 1 root root 508,   0 2026-05-08 09:00:00.000000000 +0800 /dev/nvidia-uvm\n"
        "\n/dev/nvidia-caps:\ntotal 0\n"
        "cr-------- 1 root root 236,   1 2026-05-07 10:02:12.000000000 +0000 nvidia-cap1\n"
        "ls: cannot access '/dev/nvidia9': No such file or directory\n"
    )
    entries = parse_ls(text)
    assert [e.name for e in entries] == ["nvidia0", "nvidiactl", "nvidia-uvm", "nvidia-cap1"]
    assert entries[0].mtime == datetime(2026, 5, 7, 10, 2, 11, tzinfo=UTC)
    assert entries[0].mode == "crw-rw-rw-"
    # 09:00 +0800 is 01:00 UTC on the 8th
    assert device_time_skew(entries) == timedelta(hours=14, minutes=57, seconds=49)


def test_skew_needs_a_card_and_a_control_node() -> None:
    t = datetime(2026, 1, 1, tzinfo=UTC)
    assert device_time_skew([]) is None
    assert device_time_skew([DevEntry("nvidia0", t)]) is None
    assert device_time_skew([DevEntry("nvidiactl", t), DevEntry("nvidia-uvm", t)]) is None
    later = t + timedelta(seconds=3)
    assert device_time_skew([DevEntry("nvidia0", t), DevEntry("nvidia-uvm", later)]) == timedelta(seconds=3)


def test_simulator_ls_round_trip() -> None:
    devs = [DevFile("nvidia1", "2026-04-20T02:00:41Z"), DevFile("nvidia-uvm", "2026-04-20T02:00:43Z")]
    entries = parse_ls(render_ls(devs))
    assert {e.name: e.mtime.isoformat() for e in entries} == {
        "nvidia1": "2026-04-20T02:00:41+00:00",
        "nvidia-uvm": "2026-04-20T02:00:43+00:00",
    }
    assert device_time_skew(entries) == timedelta(seconds=2)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_no_text_crashes_the_ls_parser(text: str) -> None:
    device_time_skew(parse_ls(text))
