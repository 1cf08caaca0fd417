"""Seed 002's distributed trainer: between-graph replication, async or sync.

The program of the seed document ("Putting it all together"), with only the
import line changed and the model filled in: an MLP (inputs-`--hidden`-10) on
the UCI handwritten digits shipped with tensorweave (`--data digits`, 64
features, the default) or on the seed's synthetic MNIST-shaped data
(`--data synthetic`, 784 features, used by the benchmarks), Adagrad,
replica_device_setter, MonitoredTrainingSession and StopAtStepHook.
`--sync_replicas` wraps the optimizer in SyncReplicasOptimizer.

The chief writes checkpoints and TensorBoard summaries (loss, accuracy,
global_step/sec) into --checkpoint_dir and, when training ends, prints the
accuracy of the final model on the held-out test images ("test accuracy 0.97").

Run one process per task, e.g. 1 ps + 2 workers on this machine:

    python examples/trainer.py --ps_hosts=localhost:2222 \
        --worker_hosts=localhost:2223,localhost:2224 --job_name=ps --task_index=0
    python examples/trainer.py ... --job_name=worker --task_index=0
    python examples/trainer.py ... --job_name=worker --task_index=1

Without the seed flags it reads the cluster and its task from TF_CONFIG, as
Kubeflow's TFJob (`tensorweave manifest`), SageMaker and Vertex AI set it; a
"chief" job there is the chief, otherwise worker 0 is.

Every process exits by itself when training ends: the ps tasks too.
"""
import argparse
import sys
import time

import numpy as np

import tensorweave as tf

FLAGS = None
DEFAULT_LEARNING_RATES = {"digits": 0.3, "synthetic": 0.01}


def synthetic_batches(batch_size, seed, input_dim=784, classes=10, pool=8192):
    """An endless stream of minibatches of a learnable problem: noisy class prototypes.

    The examples are drawn once, as a training set of `pool` examples, and batches
    are random slices of it (as `mnist.train.next_batch` slices a loaded set): a batch
    costs what reading one from memory costs, not fresh random draws every step."""
    protos = np.random.default_rng(1234).normal(0, 1, size=(classes, input_dim))
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, size=pool)
    images = (protos[labels] + rng.normal(0, 1.0, size=(pool, input_dim))).astype(np.float32)
    return digits_batches(images, labels.astype(np.int64), batch_size, seed)


def synthetic_test_set(n=1000, input_dim=784, classes=10):
    """Held-out examples of the synthetic problem (same prototypes, other noise)."""
    protos = np.random.default_rng(1234).normal(0, 1, size=(classes, input_dim))
    rng = np.random.default_rng(10_000)
    labels = rng.integers(0, classes, size=n)
    images = protos[labels] + rng.normal(0, 1.0, size=(n, input_dim))
    return images.astype(np.float32), labels.astype(np.int64)


def digits_batches(x_train, y_train, batch_size, seed):
    """An endless stream of random minibatches of a training set held in memory."""
    rng = np.random.default_rng(seed)
    while True:
        idx = rng.integers(0, len(x_train), size=batch_size)
        yield x_train[idx], y_train[idx]


def cluster_and_task():
    """The cluster, this task's job name and index: from the seed flags when given,
    else from TF_CONFIG (what cluster managers set)."""
    if FLAGS.job_name:
        # Create a cluster from the parameter server and worker hosts.
        cluster = tf.train.ClusterSpec({"ps": FLAGS.ps_hosts.split(","),
                                        "worker": FLAGS.worker_hosts.split(",")})
        return cluster, FLAGS.job_name, FLAGS.task_index
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if not resolver.task_type:
        sys.exit("trainer.py: no cluster given: pass --ps_hosts, --worker_hosts, --job_name "
                 "and --task_index, or set TF_CONFIG (with a \"task\").")
    return resolver.cluster_spec(), resolver.task_type, resolver.task_id


def main(_):
    cluster, job_name, task_index = cluster_and_task()
    jobs = cluster.as_dict()
    # The replicas that train: the workers, and the chief when TF_CONFIG has one.
    num_replicas = len(jobs.get("worker", [])) + len(jobs.get("chief", []))

    # Create and start a server for the local task.
    server = tf.train.Server(cluster,
                             job_name=job_name,
                             task_index=task_index)

    if job_name == "ps":
        server.join()
    elif job_name in ("worker", "chief"):
        is_chief = job_name == "chief" or ("chief" not in jobs and task_index == 0)
        data_seed = task_index + (1000 if job_name == "chief" else 0)  # a stream per task
        if FLAGS.data == "digits":
            # Imported here: under bench.tf_compat `tensorweave` is real TF, with no datasets.
            from tensorweave.datasets import load_digits
            x_train, y_train, x_test, y_test = load_digits(test_fraction=0.2, seed=0)
            batches = digits_batches(x_train, y_train, FLAGS.batch_size, seed=data_seed)
        else:
            x_test, y_test = synthetic_test_set()
            batches = synthetic_batches(FLAGS.batch_size, seed=data_seed)
        input_dim = x_test.shape[1]
        learning_rate = FLAGS.learning_rate or DEFAULT_LEARNING_RATES[FLAGS.data]
        # Assigns ops to the local worker by default.
        with tf.device(tf.train.replica_device_setter(
                worker_device="/job:%s/task:%d" % (job_name, task_index),
                cluster=cluster)):

            # Build model...
            images = tf.placeholder(tf.float32, [None, input_dim], name="images")
            labels = tf.placeholder(tf.int64, [None], name="labels")
            hidden = tf.nn.relu(
                tf.matmul(images, tf.get_variable("w1", [input_dim, FLAGS.hidden])) +
                tf.get_variable("b1", [FLAGS.hidden], initializer=tf.zeros_initializer()))
            logits = (tf.matmul(hidden, tf.get_variable("w2", [FLAGS.hidden, 10])) +
                      tf.get_variable("b2", [10], initializer=tf.zeros_initializer()))
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=labels, logits=logits))
            accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels),
                                              tf.float32))
            tf.summary.scalar("loss", loss)
            tf.summary.scalar("accuracy", accuracy)
            global_step = tf.contrib.framework.get_or_create_global_step()

            opt = tf.train.AdagradOptimizer(learning_rate)
            hooks = [tf.train.StopAtStepHook(last_step=FLAGS.train_steps)]
            if FLAGS.sync_replicas:
                opt = tf.train.SyncReplicasOptimizer(
                    opt, replicas_to_aggregate=FLAGS.replicas_to_aggregate or num_replicas,
                    total_num_replicas=num_replicas)
                hooks.append(opt.make_session_run_hook(is_chief))
            train_op = opt.minimize(loss, global_step=global_step)

        # The MonitoredTrainingSession takes care of session initialization,
        # restoring from a checkpoint, saving to a checkpoint, and closing when done
        # or an error occurs.
        start, steps, first_step_at, acc = time.time(), 0, None, float("nan")
        # As in TF 1.x, naming save_checkpoint_steps turns off the 600 s default.
        every = {"save_checkpoint_steps": FLAGS.save_checkpoint_steps} \
            if FLAGS.save_checkpoint_steps else {}
        if FLAGS.save_incremental_checkpoint_secs is not None:   # DeepRec's
            every["save_incremental_checkpoint_secs"] = FLAGS.save_incremental_checkpoint_secs
        # The chief evaluates the final model on the test set as the session ends
        # (before the ps tasks are told the job is done).
        test_hook = tf.train.FinalOpsHook(accuracy, {images: x_test, labels: y_test})
        # Each worker's session sees only the ps tasks and its own task (the idiom of
        # TF's mnist_replica.py): it neither waits for nor talks to the other workers.
        config = tf.ConfigProto(
            device_filters=["/job:ps", "/job:%s/task:%d" % (job_name, task_index)])
        with tf.train.MonitoredTrainingSession(master=server.target,
                                               is_chief=is_chief,
                                               config=config,
                                               checkpoint_dir=FLAGS.checkpoint_dir,
                                               hooks=hooks, chief_only_hooks=[test_hook],
                                               save_summaries_steps=FLAGS.log_every,
                                               **every) as mon_sess:
            while not mon_sess.should_stop():
                x, y = next(batches)
                _, step, loss_v, acc = mon_sess.run([train_op, global_step, loss, accuracy],
                                                    {images: x, labels: y})
                first_step_at = first_step_at or time.time()
                steps += 1
                if steps % FLAGS.log_every == 0:
                    print("%s %d: local step %d, global step %d, loss %.4f, batch accuracy"
                          " %.3f" % (job_name, task_index, steps, step, loss_v, acc),
                          flush=True)
        elapsed = time.time() - start
        print("%s %d: done, %d local steps, %.1f examples/s, first step after %.2fs, "
              "final batch accuracy %.3f" % (job_name, task_index, steps,
                                             steps * FLAGS.batch_size / max(elapsed, 1e-9),
                                             (first_step_at or time.time()) - start, acc),
              flush=True)
        if is_chief and test_hook.final_ops_values is not None:
            print("%s %d: test accuracy %.4f on %d held-out %s examples" % (
                job_name, task_index, test_hook.final_ops_values, len(y_test), FLAGS.data),
                flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.register("type", "bool", lambda v: v.lower() == "true")
    # Flags for defining the tf.train.ClusterSpec
    parser.add_argument("--ps_hosts", type=str, default="",
                        help="Comma-separated list of hostname:port pairs")
    parser.add_argument("--worker_hosts", type=str, default="",
                        help="Comma-separated list of hostname:port pairs")
    parser.add_argument("--job_name", type=str, default="",
                        help="One of 'ps', 'worker' (none: read TF_CONFIG)")
    # Flags for defining the tf.train.Server
    parser.add_argument("--task_index", type=int, default=0,
                        help="Index of task within the job")
    # Flags of the filled-in model and loop
    parser.add_argument("--train_steps", type=int, default=1000)
    parser.add_argument("--batch_size", type=int, default=128)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--learning_rate", type=float, default=None,
                        help="Adagrad learning rate (default: 0.3 for digits, 0.01 for "
                             "synthetic)")
    parser.add_argument("--checkpoint_dir", type=str, default="/tmp/train_logs")
    parser.add_argument("--sync_replicas", type="bool", default=False)
    parser.add_argument("--replicas_to_aggregate", type=int, default=0)
    parser.add_argument("--save_checkpoint_steps", type=int, default=None)
    parser.add_argument("--save_incremental_checkpoint_secs", type=float, default=None,
                        help="between full checkpoints, save what changed every N seconds "
                             "(DeepRec's incremental checkpoints)")
    parser.add_argument("--log_every", type=int, default=100,
                        help="print a progress line and write summaries every N steps")
    parser.add_argument("--data", choices=["digits", "synthetic"], default="digits",
                        help="the shipped UCI digits (64 features) or the seed's synthetic "
                             "MNIST-shaped data (784 features)")
    FLAGS, unparsed = parser.parse_known_args()
    tf.app.run(main=main, argv=[sys.argv[0]] + unparsed)
