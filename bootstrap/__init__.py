"""The bootstrap Pulumi project (bootstrap/Pulumi.yaml): what the main stacks assume exists. See README.md."""
