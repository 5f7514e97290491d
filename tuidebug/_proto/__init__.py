"""Generated protobuf/gRPC modules (run scripts/gen_proto.py to regenerate)."""
