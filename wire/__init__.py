"""kafkette.wire"""
