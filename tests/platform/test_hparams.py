"""tf.contrib.training.HParams as research trainers use it (TF 1.x hparam_test's cases)."""
import json

import pytest

import tensorweave as tf

HParams = tf.contrib.training.HParams


def test_values_parse_and_types():
    hp = HParams(aaa=1, b=2.0, c_c="relu6", d=[1, 2], e=True, f=[0.5, 1.5])
    assert hp.aaa == 1 and hp.b == 2.0 and hp.c_c == "relu6" and hp.d == [1, 2]
    hp.parse("aaa=12,b=3,c_c=relu4,d=[3, 4 ,5],e=false, f[1]=2.5")
    assert hp.values() == {"aaa": 12, "b": 3.0, "c_c": "relu4", "d": [3, 4, 5],
                           "e": False, "f": [0.5, 2.5]}
    assert isinstance(hp.b, float)  # an int into a float hparam is cast
    hp.parse("d=7,e=1")  # one value for a list hparam; 1 is true
    assert hp.d == [7] and hp.e is True
    assert "aaa" in hp and "zzz" not in hp and hp.get("zzz", 3) == 3 and hp.get("aaa") == 12
    assert str(hp).startswith("[('aaa', 12)") and repr(hp).startswith("HParams([")


def test_bad_values_name_the_hyperparameter():
    hp = HParams(steps=10, lr=0.1, name="x", sizes=[1, 2], flag=False)
    with pytest.raises(ValueError, match="Unknown hyperparameter type for nope"):
        hp.parse("nope=1")
    with pytest.raises(ValueError, match="Could not parse hparam 'steps' of type int"):
        hp.parse("steps=1.5")
    with pytest.raises(ValueError, match="Malformed hyperparameter value"):
        hp.parse("steps")
    with pytest.raises(ValueError, match="'steps' of type int from 2.5"):
        hp.set_hparam("steps", 2.5)
    with pytest.raises(ValueError, match="'lr' of type float from 'fast'"):
        hp.set_hparam("lr", "fast")
    with pytest.raises(ValueError, match="'flag' of type bool"):
        hp.set_hparam("flag", 1)
    with pytest.raises(ValueError, match="Must pass a list for multi-valued parameter: sizes"):
        hp.set_hparam("sizes", 3)
    with pytest.raises(ValueError, match="takes one value, got a list"):
        hp.parse("lr=[1.0,2.0]")
    with pytest.raises(ValueError, match="reserved or already taken: values"):
        hp.add_hparam("values", 1)
    with pytest.raises(ValueError, match="cannot be empty: empty"):
        hp.add_hparam("empty", [])
    with pytest.raises(KeyError, match="add it with add_hparam"):
        hp.set_hparam("missing", 1)
    assert hp.steps == 10 and hp.lr == 0.1  # failed overrides changed nothing


def test_json_round_trip_add_and_delete():
    hp = HParams(lr=0.1, layers=[64, 32])
    hp.add_hparam("dropout", 0.5)
    text = hp.to_json(sort_keys=True)
    assert json.loads(text) == {"dropout": 0.5, "layers": [64, 32], "lr": 0.1}
    other = HParams(lr=0.0, layers=[1], dropout=0.0).parse_json(text)
    assert other.values() == hp.values()
    hp.del_hparam("dropout")
    assert "dropout" not in hp and not hasattr(hp, "dropout")
    hp.override_from_dict({"lr": 1})
    assert hp.lr == 1.0 and isinstance(hp.lr, float)
