"""EstimatorSpec, ModeKeys, export outputs and serving input receivers (the checks of
TF 1.x's model_fn_test.py, export_output_test.py and export_test.py, in our words)."""
import pytest

import tensorweave as tf
from tensorweave.estimator.export_output import (
    CLASSIFY_METHOD_NAME, PREDICT_METHOD_NAME, REGRESS_METHOD_NAME)

ModeKeys = tf.estimator.ModeKeys
Spec = tf.estimator.EstimatorSpec
export = tf.estimator.export

pytestmark = pytest.mark.usefixtures("graph")


class _Hook(tf.train.SessionRunHook):
    pass


def test_mode_keys_are_tf_strings():
    assert (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT) == ("train", "eval", "infer")


def test_train_spec_with_every_field():
    loss = tf.constant(1.0)
    spec = Spec(ModeKeys.TRAIN, predictions={"p": loss}, loss=loss, train_op=tf.no_op(),
                eval_metric_ops={"m": (loss, tf.no_op())}, training_hooks=[_Hook()],
                training_chief_hooks=[_Hook()], scaffold=tf.train.Scaffold(),
                evaluation_hooks=[_Hook()], prediction_hooks=[_Hook()])
    assert spec.mode == "train" and spec.loss is loss
    assert isinstance(spec.training_hooks, tuple) and len(spec.training_hooks) == 1


def test_a_default_scaffold_is_made():
    spec = Spec(ModeKeys.TRAIN, loss=tf.constant(1.0), train_op=tf.no_op())
    assert isinstance(spec.scaffold, tf.train.Scaffold)


@pytest.mark.parametrize("mode", ["training", "", None])
def test_unknown_mode_is_named(mode):
    with pytest.raises(ValueError, match=f"mode={mode!r}"):
        Spec(mode, loss=tf.constant(1.0))


@pytest.mark.parametrize("mode", [ModeKeys.TRAIN, ModeKeys.EVAL])
def test_missing_loss(mode):
    with pytest.raises(ValueError, match="Missing loss"):
        Spec(mode, train_op=tf.no_op(), predictions=tf.constant(1.0))


def test_loss_that_is_a_number_is_a_type_error():
    with pytest.raises(TypeError, match="loss must be a Tensor"):
        Spec(ModeKeys.TRAIN, loss=1.0, train_op=tf.no_op())


def test_loss_of_one_element_becomes_a_scalar():
    spec = Spec(ModeKeys.EVAL, loss=tf.constant([3.0]))
    assert spec.loss.shape.ndims == 0
    with tf.Session() as sess:
        assert sess.run(spec.loss) == 3.0


def test_loss_of_two_elements_is_refused_with_its_shape():
    with pytest.raises(ValueError, match=r"Loss must be scalar.*\(2,\)|Loss must be scalar.*2"):
        Spec(ModeKeys.TRAIN, loss=tf.constant([1.0, 2.0]), train_op=tf.no_op())


def test_tensors_from_another_graph_are_refused():
    with tf.Graph().as_default():
        other_loss = tf.constant(1.0)
        other_op = tf.no_op()
    with pytest.raises(ValueError, match="loss .* must be from the default graph"):
        Spec(ModeKeys.EVAL, loss=other_loss)
    with pytest.raises(ValueError, match="train_op .* must be from the default graph"):
        Spec(ModeKeys.TRAIN, loss=tf.constant(1.0), train_op=other_op)
    with pytest.raises(ValueError, match=r"predictions\['p'\] .* default graph"):
        Spec(ModeKeys.PREDICT, predictions={"p": other_loss})
    with pytest.raises(ValueError, match=r"eval_metric_ops\['m'\] .* default graph"):
        Spec(ModeKeys.EVAL, loss=tf.constant(1.0), eval_metric_ops={"m": (other_loss, other_op)})


def test_train_op_missing_or_of_the_wrong_type():
    with pytest.raises(ValueError, match="Missing train_op"):
        Spec(ModeKeys.TRAIN, loss=tf.constant(1.0))
    with pytest.raises(TypeError, match="train_op must be an Operation or a Tensor"):
        Spec(ModeKeys.TRAIN, loss=tf.constant(1.0), train_op="step")


@pytest.mark.parametrize("field", ["training_hooks", "training_chief_hooks",
                                   "evaluation_hooks", "prediction_hooks"])
def test_hooks_must_be_session_run_hooks_and_the_field_is_named(field):
    with pytest.raises(TypeError, match=f"SessionRunHook instances.*{field}"):
        Spec(ModeKeys.TRAIN, loss=tf.constant(1.0), train_op=tf.no_op(),
             **{field: [object()]})


def test_scaffold_of_the_wrong_type():
    with pytest.raises(TypeError, match="scaffold must be a tf.train.Scaffold"):
        Spec(ModeKeys.TRAIN, loss=tf.constant(1.0), train_op=tf.no_op(), scaffold=object())


def test_predictions_are_required_in_predict_mode_and_must_be_tensors():
    with pytest.raises(ValueError, match="Missing predictions"):
        Spec(ModeKeys.PREDICT)
    with pytest.raises(TypeError, match=r"predictions\['number'\] must be a Tensor"):
        Spec(ModeKeys.PREDICT, predictions={"number": 1.0})
    with pytest.raises(TypeError, match="predictions must be a Tensor or a dict"):
        Spec(ModeKeys.PREDICT, predictions=[tf.constant(1.0)])
    Spec(ModeKeys.EVAL, loss=tf.constant(1.0))  # EVAL needs none


def test_eval_metric_ops_shapes():
    loss = tf.constant(1.0)
    with pytest.raises(TypeError, match="eval_metric_ops must be a dict"):
        Spec(ModeKeys.EVAL, loss=loss, eval_metric_ops=loss)
    with pytest.raises(TypeError, match=r"\(metric_value, update_op\) tuples.*'acc'"):
        Spec(ModeKeys.EVAL, loss=loss, eval_metric_ops={"acc": loss})
    # a metric value may be a nested tuple of tensors
    Spec(ModeKeys.EVAL, loss=loss,
         eval_metric_ops={"m": ((loss, (tf.constant(2), loss)), tf.no_op())})


def test_replace_checks_again_and_keeps_the_mode():
    loss = tf.constant(1.0)
    spec = Spec(ModeKeys.EVAL, predictions={"loss": loss}, loss=loss)
    assert list(spec._replace(predictions={"m": loss}).predictions) == ["m"]
    with pytest.raises(ValueError, match="Loss must be scalar"):
        spec._replace(loss=tf.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match="mode of EstimatorSpec cannot be changed"):
        spec._replace(mode=ModeKeys.TRAIN)


# ---- export_outputs in the spec ------------------------------------------------------

def test_predict_mode_gets_a_default_predict_output():
    predictions = {"a": tf.constant(1.0), "b": tf.constant(2.0)}
    spec = Spec(ModeKeys.PREDICT, predictions=predictions)
    default = spec.export_outputs["serving_default"]
    assert isinstance(default, export.PredictOutput) and default.outputs == predictions


def test_a_single_export_output_is_also_the_default():
    out = export.RegressionOutput(value=tf.constant([1.0]))
    spec = Spec(ModeKeys.PREDICT, predictions=tf.constant(1.0), export_outputs={"head": out})
    assert spec.export_outputs == {"head": out, "serving_default": out}


def test_several_export_outputs_need_a_default():
    outs = {"h1": export.RegressionOutput(value=tf.constant([1.0])),
            "h2": export.ClassificationOutput(classes=tf.constant(["2"]))}
    with pytest.raises(ValueError, match="Multiple export_outputs.*serving_default"):
        Spec(ModeKeys.PREDICT, predictions=tf.constant(1.0), export_outputs=outs)
    outs["serving_default"] = export.PredictOutput({"x": tf.constant(["3"])})
    spec = Spec(ModeKeys.PREDICT, predictions=tf.constant(1.0), export_outputs=outs)
    assert spec.export_outputs == outs


def test_export_outputs_types():
    predictions = {"loss": tf.constant(1.0)}
    with pytest.raises(TypeError, match="export_outputs must be a dict"):
        Spec(ModeKeys.PREDICT, predictions=predictions,
             export_outputs=export.PredictOutput(predictions))
    with pytest.raises(TypeError, match="must be ExportOutput objects.*'head'"):
        Spec(ModeKeys.PREDICT, predictions=predictions, export_outputs={"head": predictions})


# ---- the ExportOutput classes -----------------------------------------------------------

def test_classification_output_checks_its_tensors():
    with pytest.raises(ValueError, match="At least one of scores and classes"):
        export.ClassificationOutput()
    with pytest.raises(ValueError, match="scores must be a float32 Tensor"):
        export.ClassificationOutput(scores=tf.constant([[1]]))
    with pytest.raises(ValueError, match="classes must be a string Tensor"):
        export.ClassificationOutput(classes=tf.constant([[1.0]]))


def test_classification_signature_takes_one_string_input():
    scores = tf.constant([[0.2, 0.8]])
    classes = tf.constant([["a", "b"]])
    out = export.ClassificationOutput(scores=scores, classes=classes)
    examples = tf.placeholder(tf.string, [None], name="examples")
    inputs, outputs = out.signature_parts({"examples": examples})
    assert inputs == {"inputs": examples}
    assert outputs == {"classes": classes, "scores": scores}
    assert out.method_name == CLASSIFY_METHOD_NAME
    with pytest.raises(ValueError, match="Classification input must be a single string"):
        out.signature_parts({"x": tf.placeholder(tf.float32, [None])})
    with pytest.raises(ValueError, match="Classification input must be a single string"):
        out.signature_parts({"a": examples, "b": examples})


def test_regression_output():
    with pytest.raises(ValueError, match="Regression output value must be a float32"):
        export.RegressionOutput(value=tf.constant([1]))
    value = tf.constant([1.5])
    out = export.RegressionOutput(value=value)
    examples = tf.placeholder(tf.string, [None])
    assert out.signature_parts({"input": examples}) == ({"inputs": examples},
                                                         {"outputs": value})
    assert out.method_name == REGRESS_METHOD_NAME


def test_predict_output():
    with pytest.raises(ValueError, match="Prediction output key must be a string"):
        export.PredictOutput({1: tf.constant(1.0)})
    with pytest.raises(ValueError, match="Prediction output value must be a Tensor.*'k'"):
        export.PredictOutput({"k": 1.0})
    single = tf.constant(1.0)
    assert export.PredictOutput(single).outputs == {"output": single}
    x = tf.placeholder(tf.float32, [None, 3])
    out = export.PredictOutput({"y": single})
    assert out.signature_parts({"x": x}) == ({"x": x}, {"y": single})
    assert out.method_name == PREDICT_METHOD_NAME


# ---- serving input receivers --------------------------------------------------------------

def test_serving_input_receiver_wraps_single_tensors():
    x = tf.placeholder(tf.float32, [None, 2])
    receiver = export.ServingInputReceiver(x, x)
    assert receiver.features == {"feature": x}
    assert receiver.receiver_tensors == {"input": x}


def test_serving_input_receiver_checks_its_fields():
    x = tf.placeholder(tf.float32, [None, 2])
    with pytest.raises(ValueError, match="features must be defined"):
        export.ServingInputReceiver(None, x)
    with pytest.raises(ValueError, match=r"features\['a'\] must be a Tensor"):
        export.ServingInputReceiver({"a": 1}, x)
    with pytest.raises(ValueError, match="receiver_tensors keys must be strings"):
        export.ServingInputReceiver(x, {1: x})
    with pytest.raises(ValueError, match="receiver_tensors must not be empty"):
        export.ServingInputReceiver(x, {})
    alt = export.ServingInputReceiver(x, x, receiver_tensors_alternatives={"other": x})
    assert alt.receiver_tensors_alternatives == {"other": {"input": x}}


def test_raw_receiver_fn_makes_placeholders_with_the_batch_dimension_free():
    with tf.Graph().as_default():
        image = tf.placeholder(tf.float32, [8, 8, 8, 1], name="image")
        label = tf.placeholder(tf.int32, [8], name="label")
    fn = export.build_raw_serving_input_receiver_fn({"image": image, "label": label})
    with tf.Graph().as_default() as g:
        receiver = fn()
        assert set(receiver.features) == {"image", "label"}
        img = receiver.receiver_tensors["image"]
        assert img.graph is g and img.op.type == "Placeholder"
        assert img.shape.as_list() == [None, 8, 8, 1] and img.dtype == tf.float32
        assert receiver.features["label"].shape.as_list() == [None]
        assert img.op.name == "image"
    fixed = export.build_raw_serving_input_receiver_fn({"image": image}, default_batch_size=3)
    with tf.Graph().as_default():
        assert fixed().features["image"].shape.as_list() == [3, 8, 8, 1]


def test_raw_receiver_fn_needs_a_known_rank():
    with pytest.raises(ValueError, match="'x'.*unknown rank"):
        export.build_raw_serving_input_receiver_fn({"x": tf.placeholder(tf.float32)})


def test_as_signature_def_names_the_tensors_and_the_method():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    y = tf.identity(x, name="y")
    sig = export.PredictOutput({"y": y}).as_signature_def({"x": x})
    assert sig.method_name == PREDICT_METHOD_NAME
    assert sig.inputs["x"].name == "x:0" and sig.outputs["y"].name == "y:0"
    assert [d.size for d in sig.inputs["x"].tensor_shape.dim] == [-1, 3]
    examples = tf.placeholder(tf.string, [None], name="examples")
    sig = export.RegressionOutput(value=tf.constant([1.0], name="v")).as_signature_def(examples)
    assert sig.inputs["inputs"].name == "examples:0" and sig.outputs["outputs"].name == "v:0"
