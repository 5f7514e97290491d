"""The live debugger: the gRPC server and wire, the online session, the training-side client and simulator, MindSpore versions."""
