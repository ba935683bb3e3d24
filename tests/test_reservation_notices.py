"""#75.3: a reserved slice group that nothing checks before the deploy gets a notice with the command that records it,
and `diff` says when a reserved group grows that the reservation must hold the new size."""

from __future__ import annotations

from tests.conftest import write_stack_file
from tests.test_reservations import offline_main, prod_with, stack_summary_of


def _unrecorded(**more):
    """prod without its records, and without the live read a protected stack makes by default (#75.3)."""
    cfg = prod_with()
    cfg["pathways:slices"] = [{**{k: v for k, v in g.items() if k != "reservationRecord"}, "readReservation": False, **more.get(g["name"], {})}
                              for g in cfg["pathways:slices"]]
    return cfg


def test_a_recorded_reservation_gets_no_notice_and_an_unrecorded_one_the_command_that_records_it(tmp_path, capsys):
    assert not [n for n in stack_summary_of("prod")["notices"] if "nothing checks" in n]
    path = write_stack_file(tmp_path, _unrecorded(), name="Pulumi.prod.yaml")
    assert offline_main(["plan", "--config", str(path)]) == 0
    said = [line for line in capsys.readouterr().out.splitlines() if "nothing checks before the deploy" in line]
    assert len(said) == 2, said  # train and explore, each with its own VMs
    train = next(line for line in said if "slice group train " in line)
    assert "consumes reservation pathways-prod-v5p" in train and "free ct5p-hightpu-4t VMs in us-east5-a" in train
    assert ("gcloud compute reservations describe pathways-prod-v5p --zone us-east5-a --format=json > "
            "stacks/reservations/train.json, then slices[].reservationRecord") in train
    # a live read is a check too, and a protected stack's default
    read = write_stack_file(tmp_path, _unrecorded(train={"readReservation": True}, explore={"readReservation": True}), name="Pulumi.prod.yaml")
    assert offline_main(["plan", "--config", str(read)]) == 0
    assert "nothing checks before the deploy" not in capsys.readouterr().out
    default = prod_with()
    default["pathways:slices"] = [{k: v for k, v in g.items() if k != "reservationRecord"} for g in default["pathways:slices"]]
    assert offline_main(["plan", "--config", str(write_stack_file(tmp_path, default, name="Pulumi.prod.yaml"))]) == 0
    assert "nothing checks before the deploy" not in capsys.readouterr().out


def test_a_block_is_recorded_with_the_blocks_command():
    said = [n for n in stack_summary_of("ironwood")["notices"] if "nothing checks" in n]
    assert len(said) == 1 and "gcloud compute reservations blocks describe ironwood-capacity --block-name block-a" in said[0]
    assert said[0].endswith("then slices[].reservationBlockRecord) or set slices[].readReservation: true")


def test_diff_says_a_growing_reserved_group_needs_its_reservation_to_hold_the_new_size(tmp_path, capsys):
    (tmp_path / "b").mkdir()
    (tmp_path / "a").mkdir()
    before = write_stack_file(tmp_path / "b", _unrecorded(), name="Pulumi.prod.yaml")
    train = next(g for g in prod_with()["pathways:slices"] if g["name"] == "train")
    after = write_stack_file(tmp_path / "a", _unrecorded(train={"count": train["count"] + 1}), name="Pulumi.prod.yaml")
    offline_main(["diff", "--config", str(after), "--before", str(before)])
    out = capsys.readouterr().out
    hosts = 16  # v5p-128: 16 hosts a slice
    lines = [line for line in out.splitlines() if line.startswith("Reservation: ")]
    assert lines == [f"Reservation: slice group train grows from {(train['count'] + train.get('spares', 0)) * hosts} to "
                     f"{(train['count'] + 1 + train.get('spares', 0)) * hosts} TPU VMs on reservation pathways-prod-v5p: the "
                     f"reservation must hold {(train['count'] + 1 + train.get('spares', 0)) * hosts} ct5p-hightpu-4t VMs before "
                     "pulumi up, or the new pools wait without nodes; only its owner grows it (gcloud compute reservations update "
                     "--vm-count)"], out
    # shrinking or an unchanged group says nothing
    offline_main(["diff", "--config", str(before), "--before", str(after)])
    assert "Reservation: " not in capsys.readouterr().out
