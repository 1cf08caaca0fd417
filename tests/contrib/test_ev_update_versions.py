"""An EmbeddingVariable id's version is the global step of its last update (DeepRec's
GlobalStepEvict), also when the program makes its global step after the model."""
import tensorweave as tf


def _versions(sess, ev):
    keys, _, _, versions = sess.run([s.tensor for s in ev.saveable_objects()[0].specs])
    return dict(zip(keys.tolist(), versions.tolist()))


def test_the_update_stamps_the_step_it_ran_at_with_a_global_step_made_after_the_model():
    with tf.Graph().as_default():
        ids = tf.placeholder(tf.int64, [None])
        ev = tf.get_embedding_variable("emb", 3)   # no global step exists yet
        loss = tf.reduce_sum(tf.nn.embedding_lookup(ev, ids))
        step = tf.train.get_or_create_global_step()   # as DeepRec's modelzoo does
        train = tf.train.AdagradOptimizer(0.1).minimize(loss, global_step=step)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train, {ids: [1, 2]})      # at step 0
            sess.run(train, {ids: [2]})         # at step 1
            sess.run(train, {ids: [3, 2]})      # at step 2
            got = _versions(sess, ev)
    assert got == {1: 0, 2: 2, 3: 2}


def test_global_step_eviction_drops_ids_not_updated_for_steps_to_live(tmp_path):
    with tf.Graph().as_default():
        ids = tf.placeholder(tf.int64, [None])
        opt = tf.EmbeddingVariableOption(evict_option=tf.GlobalStepEvict(steps_to_live=2))
        ev = tf.get_embedding_variable("emb", 3, ev_option=opt)
        loss = tf.reduce_sum(tf.nn.embedding_lookup(ev, ids))
        step = tf.train.get_or_create_global_step()
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train, {ids: [7]})                     # 7 updated at step 0
            for _ in range(4):
                sess.run(train, {ids: [8]})                 # 8 at steps 1..4
            path = saver.save(sess, str(tmp_path / "m"), global_step=step)
        keys = tf.train.load_variable(path, "emb-keys")
    assert keys.tolist() == [8]   # 7's step 0 < 5 - 2: evicted at the save


def test_a_lookup_without_an_update_does_not_refresh_the_version():
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()   # known to the lookup this time
        ids = tf.placeholder(tf.int64, [None])
        ev = tf.get_embedding_variable("emb", 3)
        rows = tf.nn.embedding_lookup(ev, ids)
        train = tf.train.GradientDescentOptimizer(0.1).minimize(
            tf.reduce_sum(rows), global_step=step)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train, {ids: [4]})           # step 0
            sess.run(tf.assign(step, 9))
            sess.run(rows, {ids: [4]})            # looked up only, at step 9
            got = _versions(sess, ev)
    assert got == {4: 0}
