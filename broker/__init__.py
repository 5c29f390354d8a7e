"""kafkette.broker"""
