"""Parameter splits: which coordinates are shared and which personal, per spec."""
import numpy as np
import pytest

from tff_idp import models
from tff_idp.models.split import check_spec, split_model


def _mlp():
    return models.build("digits_mlp", input_dim=64, num_classes=10)


def test_head_is_the_last_dense_layer_whole():
    split = split_model(_mlp(), "head")
    assert [m is None for m in split.masks] == [True, True, False, False]
    assert split.personal_tensors == [2, 3] and split.head
    assert split.personal_count == 32 * 10 + 10 and split.shared_count == 64 * 32 + 32
    assert all(np.all(split.masks[i] == 0) for i in (2, 3))


def test_rows_split_keeps_input_rows_personal_and_the_bias_shared():
    model = models.build("logistic", input_dim=14, num_classes=2)
    split = split_model(model, "rows:0-6")
    kernel = split.masks[0]
    assert kernel.shape == (14, 2) and split.masks[1] is None and not split.head
    assert np.all(kernel[:7] == 0) and np.all(kernel[7:] == 1)
    assert split.personal_count == 14 and split.shared_count == 14 + 2


def test_named_layers_and_trainable_masks_per_phase():
    model = _mlp()
    first = model.layers[0].name
    split = split_model(model, f"layers:{first}")
    assert split.personal_tensors == [0, 1] and not split.head
    shared, personal = split.trainable("shared"), split.trainable("personal")
    assert np.all(shared[0] == 0) and shared[2] is None           # personal frozen, rest as is
    assert np.all(personal[0] == 1) and personal[2] == 0.0          # shared frozen
    assert split.trainable("all") == [None] * 4
    last = model.layers[-1].name
    assert split_model(model, f"layers:{last}").head


def test_layer_names_do_not_depend_on_what_was_built_before():
    """`personal = "layers:<name>"` names a layer by its Keras name; Keras numbers unnamed
    layers per process, so without models.build resetting the count a second run in one
    process (or a second method of one run) found another layer, or none."""
    from tff_idp import models
    first = [layer.name for layer in models.build("digits_mlp").layers]
    models.build("cnn2")
    again = [layer.name for layer in models.build("digits_mlp").layers]
    assert again == first == ["dense", "dense_1"]


def test_none_is_trivial():
    split = split_model(_mlp(), "none")
    assert split.trivial and split.personal_tensors == [] and split.shared_count == 2410


@pytest.mark.parametrize("spec,why", [
    ("tail", "must be 'none'"), ("rows:5-2", "after the last"), ("layers:", "must be"),
])
def test_bad_specs_are_refused_without_a_model(spec, why):
    assert why in check_spec(spec)


@pytest.mark.parametrize("model,spec,why", [
    ("digits_mlp", "layers:nope", "has no layer 'nope'"),
    ("logistic", "rows:0-64", "has 64 rows"),
    ("logistic", "head", "leaves nothing shared"),
    ("simple_cnn", "rows:0-1", "not a Dense layer"),
])
def test_specs_the_model_does_not_have_are_refused(model, spec, why):
    net = models.build(model, input_dim=64, num_classes=10,
                       input_shape=(32, 32, 3) if model == "simple_cnn" else (64,))
    with pytest.raises(ValueError, match=why):
        split_model(net, spec)


def test_rows_half_is_the_first_half_of_the_input_rows():
    """MS-PAFL's split on Adult's 14 features: rows 0-6 private, 7-13 public, no bias."""
    model = models.build("logistic_nobias", input_dim=14, num_classes=2)
    split = split_model(model, "rows:half")
    assert len(split.masks) == 1
    assert np.all(split.masks[0][:7] == 0) and np.all(split.masks[0][7:] == 1)
    assert split.personal_count == split.shared_count == 14
