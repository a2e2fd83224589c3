"""The second stage: both sides of one example. The harness runs the implementation under test and
the reference on identical worlds (`harness`), records and faults the model (`faults`), settles the
reference's faults on the implementation's call outcomes (`translate`, `call_plan`) and, in fast
numerics, its decisions on the replay oracle's (`forcing`, `replay_oracle`, `own_noise`), and guards
what a step may not change outside its world (`outside*`). Imports the root and `worlds`."""
