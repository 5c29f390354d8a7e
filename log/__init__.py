"""kafkette.log"""
