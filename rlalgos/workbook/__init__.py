"""What the notebooks teach with: self-checking exercises (:mod:`.exercises`),
diagrams (:mod:`.diagrams`), mechanism measurements on real rollouts
(:mod:`.mechanisms`), plots (:mod:`.plots`), paired statistics (:mod:`.stats`),
the SFT that builds the base model (:mod:`.sft`) and the learned reward model
(:mod:`.reward_model`)."""
